import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startReceiver, type Receiver } from './support/receiver.js'
import { ensureWebBuilt, launchBrowser, seriousViolations, startWebServer, type WebServer } from './support/web-pages.js'

/** Every wait of a step; the pages answer in milliseconds, this only bounds a failure. */
const STEP_MS = 10_000

describe('portal in a browser', () => {
  let server: WebServer
  let receiver: Receiver
  let browser: Browser
  let context: BrowserContext
  let page: Page
  // The server's clock, moved back only to issue a link that has already expired.
  let offsetMs = 0
  const ids = { a: { endpoint: '', delivery: '', event: '' }, b: { endpoint: '', delivery: '', event: '' } }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- setup answers are probed loosely
  const admin = async (method: string, path: string, body?: unknown): Promise<any> => {
    const res = await fetch(server.url + path, {
      method,
      headers: { authorization: `Bearer ${server.adminKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const json = await res.json()
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`)
    return json
  }
  const link = async (app: string, opts: { read_only?: boolean; ttl_seconds?: number } = {}): Promise<string> => {
    const t = await admin('POST', `/v1/apps/${app}/portal-tokens`, opts)
    expect(t.url).toMatch(/\/portal#token=ptk_/)
    return `${server.url}/portal#token=${encodeURIComponent(t.token)}`
  }

  beforeAll(async () => {
    await ensureWebBuilt()
    receiver = await startReceiver()
    server = await startWebServer({ clock: { now: () => Date.now() + offsetMs } })
    await admin('POST', '/v1/apps', { id: 'acme', name: 'Acme' })
    await admin('POST', '/v1/apps', { id: 'globex', name: 'Globex' })
    ids.a.endpoint = (await admin('POST', '/v1/endpoints', { url: `${receiver.url}/acme`, app_id: 'acme', description: 'Acme orders' })).id
    ids.b.endpoint = (await admin('POST', '/v1/endpoints', { url: `${receiver.url}/globex`, app_id: 'globex' })).id
    const a = await admin('POST', '/v1/events', { type: 'order.created', data: { n: 1 }, app_id: 'acme' })
    const b = await admin('POST', '/v1/events', { type: 'order.created', data: { n: 2 }, app_id: 'globex' })
    await receiver.waitFor(2, STEP_MS)
    ids.a.event = a.id
    ids.b.event = b.id
    ids.a.delivery = (await admin('GET', `/v1/events/${a.id}`)).deliveries[0].id
    ids.b.delivery = (await admin('GET', `/v1/events/${b.id}`)).deliveries[0].id
    browser = await launchBrowser()
    context = await browser.newContext({ viewport: { width: 1280, height: 820 } })
    context.setDefaultTimeout(STEP_MS)
    page = await context.newPage()
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await server?.close()
    await receiver?.close()
  })

  it("a link for one application shows only its endpoints and deliveries, and takes the token out of the address", async () => {
    await page.goto(await link('acme'))
    await page.getByRole('heading', { name: 'Endpoints', exact: true }).waitFor()
    await page.getByRole('link', { name: `${receiver.url}/acme` }).waitFor()
    expect(page.url()).not.toContain('token=')
    expect(page.url()).toMatch(/\/portal#\/endpoints$/)
    expect(await page.evaluate('Object.values(sessionStorage).some((v) => v.startsWith("ptk_")) && localStorage.length === 0')).toBe(true)
    await expect(page.getByText(`${receiver.url}/globex`).count()).resolves.toBe(0)
    // The application's name heads the page (its id only on hover).
    await expect(page.getByTestId('portal-app').textContent()).resolves.toBe('Acme')
    await expect(page.getByTestId('portal-app').getAttribute('title')).resolves.toBe('Application id: acme')
    expect(await seriousViolations(page)).toEqual([])

    await page.getByRole('navigation').getByRole('link', { name: 'Deliveries', exact: true }).click()
    await page.getByRole('heading', { name: 'Filter deliveries' }).waitFor()
    await page.getByRole('link', { name: ids.a.delivery }).waitFor()
    await expect(page.getByText(ids.b.delivery).count()).resolves.toBe(0)
    // Another application's delivery by its id is not found, as if it did not exist.
    await page.goto(`${server.url}/portal#/deliveries/${ids.b.delivery}`)
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/not found/i)
    await page.goto(`${server.url}/portal#/deliveries/${ids.a.delivery}`)
    await page.getByTestId('attempt').first().waitFor()
    expect(await seriousViolations(page)).toEqual([])
    // An event lists its deliveries by endpoint URL.
    await page.goto(`${server.url}/portal#/events/${ids.a.event}`)
    await page.getByRole('link', { name: `${receiver.url}/acme`, exact: true }).waitFor()
  })

  it('creating an endpoint at a private address shows the destination_not_allowed message', async () => {
    await page.goto(`${server.url}/portal#/endpoints`)
    await page.getByLabel('URL').fill('http://10.1.2.3/hooks')
    // Keyboard: Enter in the form submits it.
    await page.getByLabel('URL').press('Enter')
    const alert = page.getByRole('alert')
    await alert.waitFor()
    await expect(alert.textContent()).resolves.toMatch(/^Destination not allowed \(destination_not_allowed\): Destination 10\.1\.2\.3 is not a public/)
    const created = await admin('GET', '/v1/endpoints?app_id=acme')
    expect(created.data.map((e: { url: string }) => e.url)).toEqual([`${receiver.url}/acme`])
  })

  it('a read-only link has no write controls', async () => {
    await page.goto(await link('acme', { read_only: true }))
    await page.getByRole('link', { name: `${receiver.url}/acme` }).click()
    await page.getByRole('heading', { name: 'Recent deliveries' }).waitFor()
    await expect(page.locator('header.top').textContent()).resolves.toContain('read only')
    for (const name of ['Edit', 'Pause', 'Enable', 'Send test', 'Show secret', 'Rotate secret', 'Delete', 'Recover']) {
      await expect(page.getByRole('button', { name, exact: true }).count()).resolves.toBe(0)
    }
    await page.goto(`${server.url}/portal#/endpoints`)
    await page.getByRole('heading', { name: 'Endpoints', exact: true }).waitFor()
    await expect(page.getByRole('button', { name: 'Create endpoint' }).count()).resolves.toBe(0)
    await page.goto(`${server.url}/portal#/deliveries/${ids.a.delivery}`)
    await page.getByTestId('attempt').first().waitFor()
    await expect(page.getByRole('button', { name: 'Redeliver' }).count()).resolves.toBe(0)
    expect(await seriousViolations(page)).toEqual([])
  })

  it('an expired link says so', async () => {
    offsetMs = -2 * 3_600_000
    const expired = await link('acme', { ttl_seconds: 3600 })
    offsetMs = 0
    const fresh = await context.newPage()
    try {
      await fresh.goto(expired)
      await fresh.getByRole('heading', { name: 'Link expired' }).waitFor()
      await expect(fresh.getByRole('alert').textContent()).resolves.toMatch(/expired/)
      expect(await seriousViolations(fresh)).toEqual([])
    } finally {
      await fresh.close()
    }
  })
})
