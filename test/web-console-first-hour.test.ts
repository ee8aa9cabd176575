import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startReceiver, type Receiver } from './support/receiver.js'
import { ensureWebBuilt, launchBrowser, seriousViolations, startWebServer, type WebServer } from './support/web-pages.js'

/**
 * The console as a new user meets it in the first hour (issue 35): a new endpoint in the list at
 * once, "Send test" on each row, a delivery that died on its first answer shown as final, pickers
 * instead of raw ids, a date range on deliveries, endpoint URLs on an event, and the overview's
 * time range. Each step is proven by the page's state and the API's answers.
 */

/** Every wait of a step; the pages answer in milliseconds, this only bounds a failure. */
const STEP_MS = 10_000
const HOUR = 3_600_000

describe('console, the first hour', () => {
  let server: WebServer
  let ok: Receiver
  let refusing: Receiver
  let browser: Browser
  let context: BrowserContext
  let page: Page
  // The server's clock, moved forward (never back: ids carry their time) to make old and new deliveries.
  let offsetMs = 0
  /** The time the server's clock reads. */
  const serverNow = (): number => Date.now() + offsetMs

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- setup answers are probed loosely
  const api = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> => {
    const res = await fetch(server.url + path, {
      method,
      headers: { authorization: `Bearer ${server.adminKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, json: await res.json() }
  }
  const rows = (): Promise<string[]> => page.locator('main table tbody tr').allTextContents()
  /** `datetime-local` text of an epoch time (the browser runs in UTC). */
  const local = (ms: number): string => new Date(ms).toISOString().slice(0, 16)

  beforeAll(async () => {
    await ensureWebBuilt()
    ok = await startReceiver({ status: 200, body: 'ok' })
    refusing = await startReceiver({ status: 400, body: '{"error":"unknown order"}', headers: { 'content-type': 'application/json' } })
    server = await startWebServer({ clock: { now: serverNow } })
    expect((await api('POST', '/v1/apps', { id: 'acme', name: 'Acme Corp' })).status).toBe(201)
    expect((await api('PUT', '/v1/event-types/order.created', { description: 'An order was placed' })).status).toBe(200)
    browser = await launchBrowser()
    context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC' })
    context.setDefaultTimeout(STEP_MS)
    page = await context.newPage()
    await page.goto(`${server.url}/console`)
    await page.getByLabel('API key').fill(server.adminKey)
    await page.getByLabel('API key').press('Enter')
    await page.getByRole('heading', { name: 'Queue' }).waitFor()
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await server?.close()
    await ok?.close()
    await refusing?.close()
  })

  it('a new endpoint shows in the list at once, with its own secret, and "Send test" works from its row', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Endpoints', exact: true }).click()
    await page.getByText('No endpoints yet.').waitFor()
    // The application is picked by name, not typed as an id.
    await page.getByLabel('Application').selectOption({ label: 'Acme Corp (acme)' })
    await page.getByLabel('URL').fill(`${ok.url}/orders`)
    await page.getByRole('button', { name: 'Create endpoint' }).click()
    await expect(page.getByTestId('revealed').textContent()).resolves.toMatch(/^whsec_/)
    await expect(page.getByRole('status').filter({ hasText: 'signing secret' }).textContent()).resolves.toMatch(/own signing secret \(each endpoint has its own/)
    // Still on the list page: the list below already has it.
    const link = page.getByRole('link', { name: `${ok.url}/orders`, exact: true })
    await link.waitFor()
    const [ep] = (await api('GET', '/v1/endpoints')).json.data
    expect(ep).toMatchObject({ url: `${ok.url}/orders`, app_id: 'acme' })
    expect(await seriousViolations(page)).toEqual([])

    await page.getByTestId(`send-test-${ep.id}`).click()
    const sent = page.getByRole('status').filter({ hasText: /^\s*Test event evt_\w+ sent\.$/ })
    await sent.waitFor()
    const evt = /evt_\w+/.exec((await sent.textContent())!)![0]
    expect((await api('GET', `/v1/events/${evt}`)).json).toMatchObject({ type: 'postbox.ping', deliveries: [expect.objectContaining({ endpoint_id: ep.id })] })
    const [req] = await ok.waitFor(1, STEP_MS)
    expect(JSON.parse(req!.body)).toMatchObject({ type: 'postbox.ping' })
  })

  it('a delivery that died on its first attempt (a 4xx) shows as final, never "1 / 8"', async () => {
    const ep = (await api('POST', '/v1/endpoints', { url: `${refusing.url}/orders`, app_id: 'acme', event_types: ['order.created'] })).json
    const evt = (await api('POST', '/v1/events', { type: 'order.created', data: { n: 1 }, app_id: 'acme' })).json
    await expect.poll(async () => (await api('GET', `/v1/deliveries?endpoint_id=${ep.id}`)).json.data[0]?.status, { timeout: STEP_MS }).toBe('dead')
    const dead = (await api('GET', `/v1/deliveries?endpoint_id=${ep.id}`)).json.data[0]
    expect(dead).toMatchObject({ attempt_count: 1, max_attempts: 8, event_id: evt.id })

    await page.goto(`${server.url}/console#/deliveries?status=dead`)
    const row = page.locator('main table tbody tr').filter({ hasText: dead.id })
    await row.waitFor()
    expect(await row.locator('td').nth(3).textContent()).toBe('1 (final)')
    expect(await row.textContent()).not.toContain('/ 8')
    await row.getByRole('link', { name: dead.id }).click()
    await page.getByRole('heading', { name: `Delivery ${dead.id}` }).waitFor()
    await expect(page.locator('.facts div').filter({ hasText: /^Attempts/ }).locator('dd').textContent()).resolves.toBe('1 (final)')

    // The event lists its deliveries by endpoint URL (the working endpoint takes every type too).
    await page.goto(`${server.url}/console#/events/${evt.id}`)
    await page.getByRole('link', { name: `${refusing.url}/orders`, exact: true }).waitFor()
    await page.getByRole('link', { name: `${ok.url}/orders`, exact: true }).waitFor()
    expect(await page.locator('main table tbody tr').filter({ hasText: `${refusing.url}/orders` }).textContent()).toContain('1 (final)')
    expect(await seriousViolations(page)).toEqual([])
  })

  it('filters deliveries with pickers: application, endpoint by URL, event type from the catalog', async () => {
    await page.goto(`${server.url}/console#/deliveries`)
    await page.getByRole('heading', { name: 'Filter deliveries' }).waitFor()
    const endpointOptions = page.getByLabel('Endpoint', { exact: true }).locator('option')
    await expect.poll(() => endpointOptions.allTextContents(), { timeout: STEP_MS }).toEqual(expect.arrayContaining(['any', `${ok.url}/orders`, `${refusing.url}/orders`]))
    await expect.poll(() => page.evaluate("[...document.querySelectorAll('#f-type-catalog option')].map((o) => o.value)"), { timeout: STEP_MS }).toEqual(expect.arrayContaining(['order.created']))
    await expect.poll(() => page.getByLabel('Application').locator('option').allTextContents(), { timeout: STEP_MS }).toEqual(expect.arrayContaining(['any', 'Acme Corp (acme)']))
    expect(await seriousViolations(page)).toEqual([])

    await page.getByLabel('Endpoint', { exact: true }).selectOption({ label: `${refusing.url}/orders` })
    await page.getByLabel('Event type').fill('order.created')
    await page.getByLabel('Application').selectOption('acme')
    await page.getByRole('button', { name: 'Apply' }).click()
    const refusingId = (await api('GET', '/v1/endpoints')).json.data.find((e: { url: string }) => e.url === `${refusing.url}/orders`).id
    await page.waitForURL((u) => u.hash.includes(`endpoint_id=${refusingId}`) && u.hash.includes('event_type=order.created') && u.hash.includes('app_id=acme'))
    await expect.poll(async () => (await rows()).length, { timeout: STEP_MS }).toBe(1)
    expect((await rows())[0]).toContain('order.created')
    // The picker shows the choice again after the page reads it from the address.
    expect(await page.getByLabel('Endpoint', { exact: true }).inputValue()).toBe(refusingId)
  })

  it('a date range on deliveries (?since=&until=), in the console and the API', async () => {
    const before = serverNow()
    // Two hours later by the server's clock: a delivery of its own (the ping to the working endpoint).
    offsetMs += 2 * HOUR
    const ep = (await api('GET', '/v1/endpoints')).json.data.find((e: { url: string }) => e.url === `${ok.url}/orders`)
    expect((await api('POST', `/v1/endpoints/${ep.id}/test`)).status).toBe(202)
    const all = (await api('GET', '/v1/deliveries')).json.data as { id: string; created_at: string }[]
    const late = all.filter((d) => Date.parse(d.created_at) >= before + HOUR).map((d) => d.id)
    const early = all.filter((d) => Date.parse(d.created_at) < before + HOUR).map((d) => d.id)
    // Early: the first ping and order.created to both endpoints; late: the second ping.
    expect(late.length).toBe(1)
    expect(early.length).toBe(3)
    const middle = new Date(before + HOUR).toISOString()

    // The API: [since, until), and pages that stop at since.
    expect((await api('GET', `/v1/deliveries?since=${middle}`)).json.data.map((d: { id: string }) => d.id)).toEqual(late)
    expect((await api('GET', `/v1/deliveries?until=${middle}`)).json.data.map((d: { id: string }) => d.id)).toEqual(early)
    const first = (await api('GET', `/v1/deliveries?until=${middle}&limit=1`)).json
    expect(first.data.map((d: { id: string }) => d.id)).toEqual([early[0]])
    const second = (await api('GET', `/v1/deliveries?until=${middle}&limit=1&cursor=${first.next_cursor}`)).json
    expect(second.data.map((d: { id: string }) => d.id)).toEqual([early[1]])
    const onlyLate = (await api('GET', `/v1/deliveries?since=${middle}&limit=1`)).json
    expect(onlyLate).toEqual({ data: [expect.objectContaining({ id: late[0] })], next_cursor: null })
    expect((await api('GET', `/v1/deliveries?since=${middle}&until=${middle}`)).status).toBe(400)
    expect((await api('GET', '/v1/deliveries?since=yesterday')).status).toBe(400)

    // The console: the range's fields go into the address and select the same rows.
    await page.goto(`${server.url}/console#/deliveries`)
    await page.getByLabel('Created from').fill(local(before + HOUR))
    await page.getByRole('button', { name: 'Apply' }).click()
    await page.waitForURL((u) => u.hash.includes('since='))
    await expect.poll(async () => (await rows()).map((r) => r.match(/dlv_[0-9a-z]{26}/)?.[0]), { timeout: STEP_MS }).toEqual(late)
    await page.getByLabel('Created from').fill('')
    await page.getByLabel('Created before').fill(local(before + HOUR))
    await page.getByRole('button', { name: 'Apply' }).click()
    await page.waitForURL((u) => u.hash.includes('until=') && !u.hash.includes('since='))
    await expect.poll(async () => (await rows()).map((r) => r.match(/dlv_[0-9a-z]{26}/)?.[0]), { timeout: STEP_MS }).toEqual(early)
    expect(await seriousViolations(page)).toEqual([])
  })

  it('the overview chart has a time range: 1h, 24h, 7d, 30d', async () => {
    await page.goto(`${server.url}/console#/overview`)
    await page.getByRole('heading', { name: 'Deliveries per minute, last 24 hours' }).waitFor()
    const range = page.getByRole('group', { name: 'Time range' })
    await expect(range.getByRole('button', { name: '24h' }).getAttribute('aria-pressed')).resolves.toBe('true')
    const asked = page.waitForRequest((r) => r.url().includes('/v1/stats/timeseries') && new URL(r.url()).searchParams.get('bucket') === '1h')
    await range.getByRole('button', { name: '7d' }).click()
    const query = new URL((await asked).url()).searchParams
    // Seven days, both ends from the browser's clock (two hours behind the server's here).
    expect(Date.parse(query.get('until')!) - Date.parse(query.get('since')!)).toBe(7 * 24 * HOUR)
    expect(Math.abs(Date.now() - Date.parse(query.get('until')!))).toBeLessThan(STEP_MS)
    await page.getByRole('heading', { name: 'Deliveries per hour, last 7 days' }).waitFor()
    await expect(range.getByRole('button', { name: '7d' }).getAttribute('aria-pressed')).resolves.toBe('true')
    expect(new URL(page.url()).hash).toBe('#/overview?range=7d')
    await page.locator('.chart canvas').first().waitFor()
    await expect(page.locator('.chart figcaption').textContent()).resolves.toMatch(/^Attempts per hour by outcome, last 7 days: \d+ delivered/)
    await range.getByRole('button', { name: '1h' }).click()
    await page.getByRole('heading', { name: 'Deliveries per minute, last hour' }).waitFor()
    await range.getByRole('button', { name: '30d' }).click()
    await page.getByRole('heading', { name: 'Deliveries per 6 hours, last 30 days' }).waitFor()
    expect(await seriousViolations(page)).toEqual([])
  })
})
