import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startReceiver, type Receiver } from './support/receiver.js'
import { ensureWebBuilt, launchBrowser, seriousViolations, startWebServer, type WebServer } from './support/web-pages.js'

/** Every wait of a step; the pages answer in milliseconds, this only bounds a failure. */
const STEP_MS = 10_000

describe('console in a browser', () => {
  let server: WebServer
  let receiver: Receiver
  let browser: Browser
  let context: BrowserContext
  let page: Page

  beforeAll(async () => {
    await ensureWebBuilt()
    receiver = await startReceiver({ status: 200, body: '{"received":true}', headers: { 'content-type': 'application/json' } })
    server = await startWebServer()
    browser = await launchBrowser()
    context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
    context.setDefaultTimeout(STEP_MS)
    page = await context.newPage()
    // The confirm() of destructive actions: accepted, as a person would.
    page.on('dialog', (d) => void d.accept())
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await server?.close()
    await receiver?.close()
  })

  const signIn = async (key: string): Promise<void> => {
    await page.goto(`${server.url}/console`)
    // Keyboard only: focus the field, type, Enter submits.
    await page.getByLabel('API key').focus()
    await page.keyboard.type(key)
    await page.keyboard.press('Enter')
  }


  it('serves the page with its security headers and hashed, immutable assets', async () => {
    const res = await fetch(`${server.url}/console`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-security-policy')).toMatch(/^default-src 'self'/)
    expect(res.headers.get('cache-control')).toBe('no-cache')
    const html = await res.text()
    // No inline script: every script is a file of this origin.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
    const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1]!
    const a = await fetch(server.url + asset)
    expect(a.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
  })

  it('a wrong key gets a clear message, and nothing is stored', async () => {
    await signIn('pbk_' + 'x'.repeat(43))
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/not accepted: it is unknown, revoked or mistyped/)
    expect(await page.evaluate('sessionStorage.length + localStorage.length')).toBe(0)
    expect(await seriousViolations(page)).toEqual([])
  })

  it('an admin signs in, sees the overview, creates an endpoint to a local receiver and sends a test', async () => {
    await signIn(server.adminKey)
    await page.getByRole('heading', { name: 'Deliveries per minute, last 24 hours' }).waitFor()
    // The key is in sessionStorage only, and never in the address.
    expect(await page.evaluate('({ s: Object.values(sessionStorage), l: localStorage.length })')).toEqual({ s: [server.adminKey], l: 0 })
    expect(page.url()).not.toContain(server.adminKey)
    await page.locator('.chart canvas').first().waitFor()
    expect(await seriousViolations(page)).toEqual([])

    // An application, and a portal link for it.
    await page.getByRole('navigation').getByRole('link', { name: 'Applications', exact: true }).click()
    await page.getByLabel('Name').fill('Acme')
    await page.getByLabel('Id (optional)').fill('acme')
    await page.getByRole('button', { name: 'Create application' }).click()
    await page.getByRole('cell', { name: 'acme', exact: true }).waitFor()
    await page.getByTestId('portal-link-acme').click()
    await expect(page.getByTestId('revealed').textContent()).resolves.toMatch(/\/portal#token=ptk_/)
    expect(await seriousViolations(page)).toEqual([])

    await page.getByRole('navigation').getByRole('link', { name: 'Endpoints', exact: true }).click()
    await page.getByLabel('Application').selectOption('acme')
    await page.getByLabel('URL').fill(`${receiver.url}/hooks`)
    await page.getByLabel('Description').fill('Local receiver')
    await page.getByRole('button', { name: 'Create endpoint' }).click()
    await expect(page.getByTestId('revealed').textContent()).resolves.toMatch(/^whsec_/)
    await page.getByRole('button', { name: 'Open the endpoint' }).click()
    await page.getByRole('heading', { name: `${receiver.url}/hooks` }).waitFor()
    expect(await seriousViolations(page)).toEqual([])

    await page.getByRole('button', { name: 'Send test' }).click()
    await page.getByText(/Test event evt_\w+ sent/).waitFor()
    const [req] = await receiver.waitFor(1, STEP_MS)
    expect(JSON.parse(req!.body)).toMatchObject({ type: 'postbox.ping' })
    expect((await server.pb.webhooks.endpoints.list({ limit: 1 })).data[0]).toMatchObject({ app_id: 'acme' })
  })

  it('shows the delivery succeed with its attempt and the response', async () => {
    // The delivery settles right after the receiver answers; a reload shows it.
    await expect.poll(async () => (await server.pb.webhooks.deliveries.list({ limit: 1 })).data[0]?.status, { timeout: STEP_MS }).toBe('success')
    await page.reload()
    await page.locator('table a[href^="#/deliveries/dlv_"]').first().click()
    await page.getByRole('heading', { name: /^Delivery dlv_/ }).waitFor()
    const attempt = page.getByTestId('attempt')
    await expect(attempt.count()).resolves.toBe(1)
    await expect(attempt.textContent()).resolves.toMatch(/Attempt 1.*success.*HTTP 200/)
    await expect(attempt.locator('pre').textContent()).resolves.toContain('"received": true')
    expect(await seriousViolations(page)).toEqual([])
    await page.locator('a[href^="#/endpoints/ep_"]').first().click()
    await page.getByRole('button', { name: 'Send test' }).waitFor()
  })

  it('pauses and enables the endpoint with the keyboard', async () => {
    const pause = page.getByRole('button', { name: 'Pause' })
    await pause.focus()
    await page.keyboard.press('Enter')
    await page.getByText('Paused: deliveries wait until you enable it.').waitFor()
    await expect.poll(() => page.locator('.facts .badge').first().textContent(), { timeout: STEP_MS }).toBe('paused')
    const enable = page.getByRole('button', { name: 'Enable' })
    await enable.focus()
    await page.keyboard.press('Space')
    await page.getByText('Enabled.').waitFor()
    await expect.poll(() => page.locator('.facts .badge').first().textContent(), { timeout: STEP_MS }).toBe('enabled')
    const list = await server.pb.webhooks.endpoints.list({ limit: 1 })
    expect(list.data[0]).toMatchObject({ disabled: false })
  })

  it('tabs through the navigation to a view, and Enter opens it', async () => {
    await page.goto(`${server.url}/console#/overview`)
    await page.getByRole('heading', { name: 'Queue' }).waitFor()
    await page.locator('.chart canvas').first().waitFor()
    await page.getByRole('link', { name: 'Skip to content' }).focus()
    let reached = false
    for (let i = 0; i < 12 && !reached; i++) {
      await page.keyboard.press('Tab')
      reached = await page.evaluate("document.activeElement?.textContent === 'Deliveries'")
    }
    expect(reached).toBe(true)
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { name: 'Filter deliveries' }).waitFor()
    // Focus moves to the new view right after it renders.
    await page.waitForFunction("document.activeElement?.id === 'main'", null, { timeout: 5000 })
    expect(await seriousViolations(page)).toEqual([])
  })

  it('a viewer key sees the same pages with no write control', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click()
    await signIn(server.viewerKey)
    await page.getByRole('heading', { name: 'Queue' }).waitFor()
    await expect(page.locator('header.top').textContent()).resolves.toContain('read only')
    await page.getByRole('navigation').getByRole('link', { name: 'Endpoints', exact: true }).click()
    await page.locator('table a[href^="#/endpoints/ep_"]').first().click()
    await page.getByRole('heading', { name: `${receiver.url}/hooks` }).waitFor()
    await page.getByRole('heading', { name: 'Recent deliveries' }).waitFor()
    for (const name of ['Edit', 'Pause', 'Enable', 'Send test', 'Show secret', 'Rotate secret', 'Delete', 'Recover']) {
      await expect(page.getByRole('button', { name, exact: true }).count()).resolves.toBe(0)
    }
    for (const [view, heading] of [
      ['/endpoints', 'Endpoints'],
      ['/keys', 'Keys'],
      ['/deliveries', 'Deliveries'],
      ['/templates', 'Templates'],
    ] as const) {
      await page.goto(`${server.url}/console#${view}`)
      await page.getByRole('heading', { name: heading, exact: true }).waitFor()
      // Filters and searches are forms too; what must be absent are the creating and changing ones.
      await expect(page.getByRole('button', { name: /^(Create|Redeliver|Revoke|Save)/ }).count()).resolves.toBe(0)
    }
    expect(await seriousViolations(page)).toEqual([])
  })
})
