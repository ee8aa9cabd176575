import { createServer, type Server } from 'node:http'
import { type AddressInfo } from 'node:net'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from './helpers.js'
import { launchBrowser, seriousA11yViolations } from './support/browser.js'
import { ensureSdkBuilt } from './support/sdk-build.js'
import { apiClient, ensureBuilt, killAllChildren, newAdminKey, ROOT, serverEnv, startServer, type ServerProcess } from './support/server-process.js'

/**
 * The <postbox-inbox> element in a real browser, on a page of another origin than the Postbox
 * server (so CORS is exercised), against a real `postbox serve` process that is stopped and
 * started again on the same port and data directory.
 */

/** The DOM as the page.evaluate callbacks below see it (tests compile without the DOM library). */
interface PageElement {
  className: string
  dataset: Record<string, string | undefined>
  textContent: string | null
  getAttribute(name: string): string | null
  blur(): void
  shadowRoot: { activeElement: PageElement | null; querySelector(selector: string): PageElement | null } | null
}
declare const document: { querySelector(selector: string): PageElement | null }

const USER = 'u_browser'
/** Every wait in this file is bounded by this. */
const WAIT = { timeout: 10_000 }

let dir: { dir: string; cleanup: () => void }
let adminKey: string
let server: ServerProcess
let port: number
let token: string
let site: Server
let siteUrl: string
let browser: Browser
let page: Page
/** Every URL the page requested: a token must never be among them. */
const urls: string[] = []
const call = apiClient(() => `http://127.0.0.1:${port}`, '')
const admin = (method: string, path: string, body?: unknown) => call(method, path, body, adminKey)

/** The operator's own page, on its own origin, embedding the element with a user token. */
function sitePage(postbox: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Acme</title>
<style>body { font: 15px system-ui, sans-serif; margin: 0 } header { display: flex; justify-content: space-between; align-items: center; padding: 8px 16px; border-bottom: 1px solid #ddd } main { padding: 16px }</style>
<script type="module" src="${postbox}/sdk/inbox.js"></script>
</head><body>
<header><h1>Acme</h1><postbox-inbox server="${postbox}" token="${token}" tabs="billing,security" target="_blank"></postbox-inbox></header>
<main><p>Your dashboard.</p></main>
</body></html>`
}

/**
 * Plain pages where the element is the only content: at the left edge (the browser's default
 * body margin), flush with the right edge, or at the bottom left.
 */
const EDGE_PAGES: Record<string, string> = {
  '/left': '',
  '/right': 'position: absolute; top: 0; right: 0',
  '/bottom-left': 'position: absolute; bottom: 0; left: 0',
}

function edgePage(postbox: string, style: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Plain</title>
<script type="module" src="${postbox}/sdk/inbox.js"></script>
</head><body><postbox-inbox server="${postbox}" token="${token}" style="${style}"></postbox-inbox></body></html>`
}

async function send(title: string, extra: Record<string, unknown> = {}): Promise<void> {
  const r = await admin('POST', '/v1/notifications', { topic: 'billing.invoice', recipients: [`user:${USER}`], title, body: `${title} body`, tags: ['billing'], ...extra })
  expect(r.status, r.text).toBe(202)
}

const shadow = (selector: string) => page.locator('postbox-inbox').locator(selector)
const badge = () => shadow('.badge')
const titles = () => shadow('.item .title').allTextContents()
const waitConnected = () => page.waitForFunction(() => document.querySelector('postbox-inbox')?.shadowRoot?.querySelector('.status')?.textContent === '', null, WAIT)

beforeAll(async () => {
  await Promise.all([ensureBuilt(), ensureSdkBuilt()])
  dir = tempDir('postbox-inbox-browser-')
  adminKey = newAdminKey()
  server = await startServer(serverEnv(dir.dir, adminKey))
  port = server.port
  const t = await admin('POST', `/v1/users/${USER}/tokens`, {})
  expect(t.status, t.text).toBe(201)
  token = t.json.token
  site = createServer((req, res) => {
    if (req.url === '/') res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(sitePage(`http://127.0.0.1:${port}`))
    else if (req.url && req.url in EDGE_PAGES) res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(edgePage(`http://127.0.0.1:${port}`, EDGE_PAGES[req.url]!))
    else if (req.url?.startsWith('/landing')) res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>Invoice</title><h1>Invoice</h1>')
    else res.writeHead(404).end()
  })
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r))
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`
  browser = await launchBrowser()
  page = await browser.newPage({ viewport: { width: 900, height: 640 } })
  page.setDefaultTimeout(WAIT.timeout)
  page.on('request', (req) => urls.push(req.url()))
  await page.goto(`${siteUrl}/`)
  await waitConnected()
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await new Promise((r) => site?.close(r))
  await server?.stop()
  await killAllChildren()
  dir?.cleanup()
})

describe('<postbox-inbox> in a browser', () => {
  it('loads cross-origin with no unread badge', async () => {
    expect(new URL(siteUrl).port).not.toBe(String(port))
    await expect.poll(() => badge().isHidden(), WAIT).toBe(true)
    // The badge is hidden before the counts arrive too: the label says they did.
    await expect.poll(() => shadow('.bell').getAttribute('aria-label'), WAIT).toBe('Notifications, none unread')
  })

  it('a notification sent through the API appears live and raises the badge', async () => {
    await send('Invoice paid', { action_url: `${siteUrl}/landing?invoice=1` })
    await expect.poll(() => badge().textContent(), WAIT).toBe('1')
    expect(await shadow('.bell').getAttribute('aria-label')).toBe('Notifications, 1 unread')
    expect(await shadow('[aria-live="polite"]').textContent()).toBe('1 unread notification')
    await shadow('.bell').click()
    await expect.poll(titles, WAIT).toEqual(['Invoice paid'])
  })

  it('clicking it opens the action and lowers the badge', async () => {
    const popup = page.waitForEvent('popup', WAIT)
    await shadow('.item .open').first().click()
    const opened = await popup
    await opened.waitForLoadState('domcontentloaded', WAIT)
    expect(opened.url()).toBe(`${siteUrl}/landing?invoice=1`)
    await opened.close()
    await expect.poll(() => badge().isHidden(), WAIT).toBe(true)
    // The server agrees: the message is read, and the click is recorded.
    await expect.poll(async () => (await call('GET', '/v1/inbox/unread-count', undefined, token)).json.unread_count, WAIT).toBe(0)
    const [clicked] = (await call('GET', '/v1/inbox', undefined, token)).json.data
    expect(clicked).toMatchObject({ title: 'Invoice paid', read: true })
    expect(Date.parse(clicked.clicked_at)).toBeGreaterThan(0)
  })

  it('is operable from the keyboard: bell, messages, their actions, tabs and Escape', async () => {
    await shadow('.bell').click() // close
    await send('Card expiring')
    await expect.poll(() => badge().textContent(), WAIT).toBe('1')
    await page.locator('h1').click()
    // Tab from the page into the element: the bell takes focus, Enter opens the panel on the newest message.
    await page.keyboard.press('Tab')
    expect(await page.evaluate(() => document.querySelector('postbox-inbox')?.shadowRoot?.activeElement?.className)).toBe('bell')
    await page.keyboard.press('Enter')
    await expect.poll(() => shadow('.panel').isVisible(), WAIT).toBe(true)
    const focused = () => page.evaluate(() => {
      const el = document.querySelector('postbox-inbox')?.shadowRoot?.activeElement
      return el ? `${el.dataset.action ?? el.className}|${el.getAttribute('aria-label') ?? el.textContent}` : null
    })
    expect(await focused()).toMatch(/^open\|.*Card expiring/)
    await page.keyboard.press('Tab')
    expect(await focused()).toBe('toggle-read|Mark as read: Card expiring')
    await page.keyboard.press('Enter')
    await expect.poll(() => badge().isHidden(), WAIT).toBe(true)
    // Focus stays on the same control, now the opposite action.
    expect(await focused()).toBe('toggle-read|Mark as unread: Card expiring')
    await page.keyboard.press('Enter')
    await expect.poll(() => badge().textContent(), WAIT).toBe('1')
    // The tabs follow the ARIA pattern: arrows move and select.
    await shadow('[role="tab"][aria-selected="true"]').focus()
    await page.keyboard.press('ArrowRight')
    expect(await shadow('[role="tab"][aria-selected="true"]').textContent()).toMatch(/^Billing/)
    await page.keyboard.press('Home')
    expect(await shadow('[role="tab"][aria-selected="true"]').textContent()).toMatch(/^All/)
    await page.keyboard.press('Escape')
    await expect.poll(() => shadow('.panel').isHidden(), WAIT).toBe(true)
    expect(await focused()).toMatch(/^bell\|/)
  })

  it('tabs by tag show exact counts from /v1/inbox/counts and filter the list', async () => {
    await send('New sign-in', { topic: 'security.login', tags: ['security'] })
    await send('Password changed', { topic: 'security.password', tags: ['security'] })
    await expect.poll(() => badge().textContent(), WAIT).toBe('3')
    await shadow('.bell').click()
    const tabText = () => shadow('[role="tab"]').allTextContents()
    // Billing: "Card expiring" unread (Invoice paid was clicked); Security: two unread.
    await expect.poll(tabText, WAIT).toEqual(['All3, 3 unread', 'Billing1, 1 unread', 'Security2, 2 unread'])
    await shadow('[role="tab"]').filter({ hasText: 'Security' }).click()
    await expect.poll(titles, WAIT).toEqual(['Password changed', 'New sign-in'])
    expect(await shadow('[role="tabpanel"]').getAttribute('aria-labelledby')).toBe('tab-security')
    // A new billing message does not enter the Security list, but its tab count moves.
    await send('Refund issued')
    await expect.poll(tabText, WAIT).toEqual(['All4, 4 unread', 'Billing2, 2 unread', 'Security2, 2 unread'])
    expect(await titles()).toEqual(['Password changed', 'New sign-in'])
    // "Mark all as read" in a tab marks that tab only.
    await shadow('[data-action="read-all"]').click()
    await expect.poll(tabText, WAIT).toEqual(['All2, 2 unread', 'Billing2, 2 unread', 'Security'])
    await expect.poll(() => badge().textContent(), WAIT).toBe('2')
  })

  it('archive and snooze from the list, and the server agrees', async () => {
    const archive = shadow('.item').filter({ hasText: 'New sign-in' }).locator('[data-action="archive"]')
    await archive.click()
    await expect.poll(titles, WAIT).toEqual(['Password changed'])
    await shadow('.item').filter({ hasText: 'Password changed' }).locator('[data-action="snooze-menu"]').click()
    await shadow('.menu:not([hidden]) button').filter({ hasText: 'For 1 hour' }).click()
    await expect.poll(titles, WAIT).toEqual([])
    expect(await shadow('.empty').isVisible()).toBe(true)
    // The list changes at once; the server's answer to the snooze may come after it.
    await expect.poll(async () => (await call('GET', '/v1/inbox?tags=security&archived=false', undefined, token)).json.data, WAIT).toEqual([])
    const snoozed = (await call('GET', '/v1/inbox?snoozed=true', undefined, token)).json
    expect(snoozed.data.map((m: { title: string }) => m.title)).toEqual(['Password changed'])
    expect(Date.parse(snoozed.data[0].snoozed_until) - Date.now()).toBeGreaterThan(3_500_000)
    await shadow('[role="tab"]').filter({ hasText: 'All' }).click()
    await expect.poll(titles, WAIT).toEqual(['Refund issued', 'Card expiring', 'Invoice paid'])
    await shadow('.bell').click()
  })

  it('has no serious or critical accessibility violations, closed and open', async () => {
    expect(await seriousA11yViolations(page)).toEqual([])
    await shadow('.bell').click()
    await expect.poll(() => shadow('.item').count(), WAIT).toBeGreaterThan(0)
    expect(await seriousA11yViolations(page)).toEqual([])
    // POSTBOX_SCREENSHOTS=1 refreshes the picture in docs/inbox-element.md.
    if (process.env.POSTBOX_SCREENSHOTS) {
      await page.evaluate(() => (document.querySelector('postbox-inbox')?.shadowRoot?.activeElement)?.blur())
      const panel = (await shadow('.panel').boundingBox())!
      const x = Math.max(0, panel.x - 24)
      await page.screenshot({ path: join(ROOT, 'docs', 'images', 'inbox-element.png'), clip: { x, y: 0, width: panel.x + panel.width + 16 - x, height: panel.y + panel.height + 16 } })
    }
  })

  it('after the server restarts, it reconnects with Last-Event-ID and shows what it missed exactly once', async () => {
    const before = await titles()
    const unreadBefore = Number(await badge().textContent())
    // Hold the element's next stream request until the restarted server has the missed messages.
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const resumed: (string | undefined)[] = []
    await page.route(
      (url) => url.pathname === '/v1/inbox/stream',
      async (route) => {
        if (route.request().method() === 'GET') {
          resumed.push(route.request().headers()['last-event-id'])
          await gate
        }
        await route.continue()
      },
    )
    expect(await server.stop()).toBe(0)
    await page.waitForFunction(() => document.querySelector('postbox-inbox')?.shadowRoot?.querySelector('.status')?.textContent === 'Reconnecting…', null, WAIT)
    server = await startServer(serverEnv(dir.dir, adminKey, { POSTBOX_PORT: String(port) }))
    expect(server.port).toBe(port)
    await send('Missed one')
    await send('Missed two')
    await expect.poll(() => resumed.length, WAIT).toBeGreaterThan(0)
    release()
    await waitConnected()
    await expect.poll(titles, WAIT).toEqual(['Missed two', 'Missed one', ...before])
    expect(resumed[0]).toMatch(/^\d+$/)
    await expect.poll(() => badge().textContent(), WAIT).toBe(String(unreadBefore + 2))
    // Nothing arrives twice, even after another round trip.
    await send('After restart')
    await expect.poll(titles, WAIT).toEqual(['After restart', 'Missed two', 'Missed one', ...before])
    await page.unroute((url) => url.pathname === '/v1/inbox/stream')
  })

  it('never put the token in a URL', () => {
    expect(urls.filter((u) => u.includes('/v1/inbox/stream')).length).toBeGreaterThan(1)
    expect(urls.filter((u) => u.includes(token) || /[?&]token=/.test(u))).toEqual([])
  })
})

describe('<postbox-inbox> keeps its panel inside the viewport', () => {
  // A message of its own, so these run alone too (vitest -t viewport).
  beforeAll(() => send('Panel placement'))

  /** Opens `path` at `viewport`, opens the panel, and returns the page once messages are listed. */
  const openAt = async (path: string, viewport: { width: number; height: number }): Promise<Page> => {
    const p = await browser.newPage({ viewport })
    p.setDefaultTimeout(WAIT.timeout)
    await p.goto(`${siteUrl}${path}`)
    await p.locator('postbox-inbox').locator('.bell').click()
    await expect.poll(() => p.locator('postbox-inbox').locator('.item').count(), WAIT).toBeGreaterThan(0)
    return p
  }

  /** The panel's box lies inside the viewport, and a message's control takes a real click (its state flips, then back). */
  const expectUsable = async (p: Page, viewport: { width: number; height: number }): Promise<void> => {
    const box = (await p.locator('postbox-inbox').locator('.panel').boundingBox())!
    expect(box.x).toBeGreaterThanOrEqual(0)
    expect(box.y).toBeGreaterThanOrEqual(0)
    expect(box.x + box.width).toBeLessThanOrEqual(viewport.width)
    expect(box.y + box.height).toBeLessThanOrEqual(viewport.height)
    const toggle = p.locator('postbox-inbox').locator('.item').first().locator('[data-action="toggle-read"]')
    const before = (await toggle.getAttribute('aria-label'))!
    const after = before.startsWith('Mark as read') ? before.replace('Mark as read', 'Mark as unread') : before.replace('Mark as unread', 'Mark as read')
    // Playwright clicks only when the control itself is what the point hits (not covered, not off-screen).
    await toggle.click()
    await expect.poll(() => toggle.getAttribute('aria-label'), WAIT).toBe(after)
    await toggle.click()
    await expect.poll(() => toggle.getAttribute('aria-label'), WAIT).toBe(before)
    await p.close()
  }

  it('at the left edge of a plain page', async () => {
    const viewport = { width: 1024, height: 700 }
    await expectUsable(await openAt('/left', viewport), viewport)
  })

  it('at the right edge of a plain page', async () => {
    const viewport = { width: 1024, height: 700 }
    await expectUsable(await openAt('/right', viewport), viewport)
  })

  it('on a narrow (mobile) viewport, at either edge', async () => {
    const viewport = { width: 360, height: 640 }
    const left = await openAt('/left', viewport)
    // Narrowed to the viewport less a margin on each side.
    expect((await left.locator('postbox-inbox').locator('.panel').boundingBox())!.width).toBeLessThanOrEqual(360 - 16)
    await expectUsable(left, viewport)
    await expectUsable(await openAt('/right', viewport), viewport)
  })

  it('at the bottom of the viewport, it opens above the bell', async () => {
    const viewport = { width: 800, height: 600 }
    const p = await openAt('/bottom-left', viewport)
    const bell = (await p.locator('postbox-inbox').locator('.bell').boundingBox())!
    const panel = (await p.locator('postbox-inbox').locator('.panel').boundingBox())!
    expect(panel.y + panel.height).toBeLessThanOrEqual(bell.y)
    await expectUsable(p, viewport)
  })
})
