import { mkdirSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { silentLogger } from '../src/log.js'
import { Postbox } from '../src/postbox.js'
import { listen } from '../src/server.js'

/**
 * `npm run screenshots`: the pictures of docs/console.md. A Postbox in a throwaway directory gets
 * a day of history (events, and attempts settled at their own minute, some failing), then the
 * real pages are photographed with Debian's chromium. The dispatcher is not started: nothing is
 * sent while the pictures are taken, so they are the same from run to run but for the times.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), import.meta.url.includes('/dist/scripts/') ? '../..' : '..')
const OUT = join(ROOT, 'docs', 'images')
const ADMIN = 'pbk_' + 'S'.repeat(43)
const MINUTE = 60_000

let now = Date.now()
const clock = { now: () => now }
/** A small deterministic generator, so the history has the same shape every run. */
let seed = 7
const rand = (): number => ((seed = (seed * 16807) % 2147483647) / 2147483647)

const receiver = createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{"received":true}')
  })
})
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`

const dir = mkdtempSync(join(tmpdir(), 'postbox-shots-'))
const real = Date.now()
now = real - 24 * 60 * MINUTE
const pb = await Postbox.open({ dataDir: dir, adminKey: ADMIN, allowNetworks: ['127.0.0.0/8'], port: 0, host: '127.0.0.1', log: silentLogger(), clock })
await pb.apps.create({ id: 'acme', name: 'Acme Inc.' })
await pb.apps.create({ id: 'globex', name: 'Globex' })
const acme = await pb.endpoints.create({ url: `${hook}/acme/webhooks`, description: 'Acme orders service', event_types: ['order.*', 'invoice.*'], app_id: 'acme' })
await pb.endpoints.create({ url: `${hook}/globex/hooks`, description: 'Globex billing', app_id: 'globex' })
const flaky = await pb.endpoints.create({ url: `${hook}/acme/legacy`, description: 'Legacy CRM (failing since noon)', event_types: ['invoice.*'], app_id: 'acme' })

// A day, minute by minute: a daily wave of traffic; the legacy endpoint fails for the last hours.
for (let m = 0; m < 24 * 60; m++) {
  now = real - (24 * 60 - m) * MINUTE
  const wave = 4 + 3 * Math.sin((m / (24 * 60)) * 2 * Math.PI - 1)
  const n = Math.max(0, Math.round(wave + rand() * 3))
  for (let i = 0; i < n; i++) {
    const app = rand() < 0.7 ? 'acme' : 'globex'
    const type = rand() < 0.5 ? 'order.created' : 'invoice.paid'
    await pb.events.send({ type, data: { id: `${type.split('.')[0]}_${m}_${i}`, amount: Math.round(rand() * 50_000) / 100 }, app_id: app })
  }
  const failing = m > 16 * 60
  const claimed = await pb.store.deliveries.claimDue({ limit: 100, now, defaultTimeoutMs: 15_000 })
  await pb.store.deliveries.settle(
    claimed.map((d) => {
      const bad = d.endpointId === flaky.id && failing
      const ms = Math.round(40 + rand() * 120)
      return {
        id: d.id,
        claimToken: d.claimToken,
        outcome: bad ? (d.attempts >= 3 ? { kind: 'dead' as const } : { kind: 'retry' as const, at: now + 10 * MINUTE }) : { kind: 'success' as const },
        attempt: { startedAt: now, durationMs: bad ? 15_000 : ms, statusCode: bad ? 503 : 200, responseBody: bad ? 'Service Unavailable' : '{"received":true}' },
      }
    }),
    now + 200,
  )
  // The health the dispatcher would have recorded (only the store is driven here).
  for (const d of claimed) {
    if (d.endpointId === flaky.id && failing) await pb.store.endpoints.recordFailure(flaky.id, true, now)
    else if (d.endpointId) await pb.store.endpoints.recordSuccess(d.endpointId, now)
  }
}
await pb.store.endpoints.pause(flaky.id, real + 5 * MINUTE)
now = real
clock.now = () => Date.now()

const server = await listen(pb, silentLogger())
const base = `http://127.0.0.1:${server.port}`
const portal = await pb.apps.portalToken('acme', { ttl_seconds: 3600 })
mkdirSync(OUT, { recursive: true })
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
})
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  await page.goto(`${base}/console`)
  await page.getByLabel('API key').fill(ADMIN)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.locator('.chart canvas').first().waitFor()
  await page.screenshot({ path: join(OUT, 'console-overview.png') })
  await page.goto(`${base}/console#/endpoints/${acme.id}`)
  await page.locator('.chart canvas').first().waitFor()
  await page.screenshot({ path: join(OUT, 'console-endpoint.png') })
  await page.goto(`${base}/console#/templates`)
  await page.getByTestId('preview-title').waitFor()
  await page.screenshot({ path: join(OUT, 'console-templates.png') })
  const p = await browser.newPage({ viewport: { width: 1280, height: 720 } })
  await p.goto(`${base}/portal#token=${portal.token}`)
  await p.getByRole('link', { name: `${hook}/acme/webhooks` }).waitFor()
  await p.screenshot({ path: join(OUT, 'portal.png') })
  console.log(`wrote ${OUT}/{console-overview,console-endpoint,console-templates,portal}.png`)
} finally {
  await browser.close()
  await server.close()
  receiver.close()
  rmSync(dir, { recursive: true, force: true })
}
