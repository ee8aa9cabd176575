/**
 * Applications benchmark (docs/applications.md).
 *
 * 1. Ingest plus fan-out (event + 3 deliveries, one transaction per 100 events, no HTTP) into a
 *    file with 1 application of 3 endpoints, and into a file with 10,000 applications of 3
 *    endpoints each (events spread over all of them), interleaved round by round in the same
 *    run. Target: the 10,000-application figure within 10 % of the 1-application one. Both use a
 *    named application (not `default`), so both pay the per-application indexes.
 * 2. Schema validation: Ajv's cost per event for a typical 1 KB payload, alone and inside ingest.
 *
 * CPU time, not wall time: the box is shared. BENCH_DROP=<index,…> drops indexes from both files
 * first, to see what each costs (e.g. BENCH_DROP=events_app,deliveries_app).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { testConfig } from '../src/config.js'
import { systemClock } from '../src/lib/clock.js'
import { silentLogger } from '../src/log.js'
import { openStore, type Store } from '../src/store/index.js'
import { createWebhookService } from '../src/webhooks/service.js'
import { createCatalog } from '../src/apps/catalog.js'

const APPS = 10_000
const ENDPOINTS_PER_APP = 3
const ROUNDS = 5
const EVENTS_PER_ROUND = 4_000
const BATCH = 100

interface Setup {
  store: Store
  webhooks: ReturnType<typeof createWebhookService>
  apps: string[]
  dir: string
}

async function setup(apps: number): Promise<Setup> {
  const drop = process.env.BENCH_DROP ?? ''
  const dir = mkdtempSync(join(tmpdir(), 'postbox-bench-apps-'))
  const store = openStore(join(dir, 'postbox.db'))
  const config = testConfig({ allowNetworks: ['127.0.0.0/8'] })
  for (const ix of drop.split(',').filter(Boolean)) store.sqlite!.db.exec(`DROP INDEX ${ix}`)
  const webhooks = createWebhookService({ store, config, clock: systemClock, rng: Math.random, log: silentLogger() })
  const ids: string[] = []
  await store.tx(async (s) => {
    for (let a = 0; a < apps; a++) {
      const id = `tenant-${a}`
      await s.apps.insert({ id, name: id, metadata: {} }, Date.now())
      ids.push(id)
    }
  })
  // Endpoints through the store in one transaction: 30,000 creates through the service would
  // each commit on their own and take most of the bench's budget.
  await store.tx(async (s) => {
    let n = 0
    for (const appId of ids) {
      for (let e = 0; e < ENDPOINTS_PER_APP; e++) {
        await s.endpoints.insert({
          id: `ep_${(n++).toString(36).padStart(26, '0')}`, appId, url: `http://127.0.0.1:9/${appId}/${e}`, description: '', eventTypes: null, headers: {},
          method: 'POST', timeoutMs: 15_000, maxConcurrency: 16, rateLimit: null, ordered: false, retrySchedule: null, signature: 'standard',
          metadata: {}, secret: 'whsec_' + Buffer.alloc(32, 1).toString('base64'), disabled: false, disabledReason: null,
        }, Date.now())
      }
    }
  })
  return { store, webhooks, apps: ids, dir }
}

/** CPU time of this process so far (user + system), in ms: wall-clock rates mean little on a shared box. */
const cpuMs = (): number => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

/** CPU µs per event of `events` events in batches, each event to a random application of the setup. */
async function ingest(s: Setup, events: number, rng: () => number): Promise<number> {
  const t0 = cpuMs()
  for (let i = 0; i < events; i += BATCH) {
    const batch = Array.from({ length: BATCH }, (_, j) => ({ type: 'bench.event', data: { i: i + j }, app_id: s.apps[Math.floor(rng() * s.apps.length)]! }))
    await s.webhooks.events.sendMany(batch)
  }
  return ((cpuMs() - t0) * 1000) / events
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** A deterministic generator, so both files see the same sequence of choices. */
function lcg(seed: number): () => number {
  let x = seed >>> 0
  return () => ((x = (Math.imul(x, 1664525) + 1013904223) >>> 0) / 2 ** 32)
}

/** A typical 1 KB payload and its schema: an order with a customer, an address and line items. */
export const ORDER_SCHEMA = {
  type: 'object',
  required: ['order_id', 'customer', 'items', 'total'],
  properties: {
    order_id: { type: 'string', pattern: '^ord_[a-z0-9]+$' },
    total: { type: 'number', minimum: 0 },
    currency: { type: 'string', enum: ['EUR', 'USD', 'GBP'] },
    customer: {
      type: 'object',
      required: ['id', 'email'],
      properties: { id: { type: 'string' }, email: { type: 'string', format: 'email' }, name: { type: 'string', maxLength: 200 } },
    },
    shipping: { type: 'object', properties: { line1: { type: 'string' }, city: { type: 'string' }, zip: { type: 'string' }, country: { type: 'string', minLength: 2, maxLength: 2 } } },
    items: {
      type: 'array',
      maxItems: 100,
      items: { type: 'object', required: ['sku', 'qty', 'price'], properties: { sku: { type: 'string' }, qty: { type: 'integer', minimum: 1 }, price: { type: 'number' }, title: { type: 'string' } } },
    },
    created_at: { type: 'string', format: 'date-time' },
  },
}

/** A payload of about 1 KB that satisfies ORDER_SCHEMA. */
export function orderPayload(i: number): Record<string, unknown> {
  return {
    order_id: `ord_${i.toString(36)}`,
    total: 129.5,
    currency: 'EUR',
    customer: { id: `cus_${i}`, email: `customer${i}@example.com`, name: 'Ada Lovelace' },
    shipping: { line1: '12 Analytical Engine Street', city: 'London', zip: 'NW1 6XE', country: 'GB' },
    items: Array.from({ length: 9 }, (_, k) => ({ sku: `sku-${k}-${i}`, qty: k + 1, price: 9.99 + k, title: `Item number ${k} of a typical order` })),
    created_at: '2026-12-01T12:00:00Z',
  }
}

async function validationCost(): Promise<{ validateUs: number; payloadBytes: number; ingestPlainUs: number; ingestValidatedUs: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'postbox-bench-ajv-'))
  const store = openStore(join(dir, 'postbox.db'))
  try {
    const config = testConfig()
    const catalog = createCatalog({ store, config, clock: systemClock })
    await catalog.put('order.placed', { schema: ORDER_SCHEMA })
    const payloads = Array.from({ length: 1000 }, (_, i) => orderPayload(i))
    const N = 100_000
    // The ingest path: one refresh per request, then the in-memory check per event.
    await catalog.refresh()
    for (let i = 0; i < 5_000; i++) await catalog.checkAll([{ type: 'order.placed', data: payloads[i % 1000], appId: 'default' }])
    const t0 = cpuMs()
    for (let i = 0; i < N; i++) await catalog.checkAll([{ type: 'order.placed', data: payloads[i % 1000], appId: 'default' }])
    const validateUs = ((cpuMs() - t0) * 1000) / N
    // The same ingest with and without a schema on the type, interleaved.
    const webhooks = createWebhookService({ store, config, clock: systemClock, rng: Math.random, log: silentLogger() })
    const send = async (type: string): Promise<number> => {
      const t = cpuMs()
      for (let i = 0; i < 5_000; i += BATCH) await webhooks.events.sendMany(payloads.slice(i % 1000, (i % 1000) + BATCH).map((data) => ({ type, data })))
      return ((cpuMs() - t) * 1000) / 5_000
    }
    const plain: number[] = []
    const validated: number[] = []
    for (let r = 0; r < 4; r++) {
      plain.push(await send('order.untyped'))
      validated.push(await send('order.placed'))
    }
    return { validateUs, payloadBytes: Buffer.byteLength(JSON.stringify(payloads[0])), ingestPlainUs: median(plain), ingestValidatedUs: median(validated) }
  } finally {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Runs both parts and prints their figures. */
export async function run(): Promise<void> {
  const t0 = performance.now()
  const one = await setup(1)
  const many = await setup(APPS)
  console.log(`setup: 1 app × ${ENDPOINTS_PER_APP} endpoints, ${APPS} apps × ${ENDPOINTS_PER_APP} endpoints (${((performance.now() - t0) / 1000).toFixed(1)} s)`)
  try {
    // Warm-up: every application of the large file once (a first event to an application reads
    // its endpoints once, reported apart), and as many events into the small file.
    const coldUs = await ingest(many, APPS, lcg(7))
    await ingest(one, APPS, lcg(7))
    const a: number[] = []
    const b: number[] = []
    const c: number[] = []
    for (let r = 0; r < ROUNDS; r++) {
      a.push(await ingest(one, EVENTS_PER_ROUND, lcg(r + 1)))
      // Each round posts to one of the 10,000 applications (a different one each round).
      const target = { ...many, apps: [many.apps[(r * 1697) % APPS]!] }
      b.push(await ingest(target, EVENTS_PER_ROUND, lcg(r + 1)))
      c.push(await ingest(many, EVENTS_PER_ROUND, lcg(r + 1)))
    }
    const [ma, mb, mc] = [median(a), median(b), median(c)]
    const line = (label: string, us: number) => console.log(`  ${label.padEnd(46)} ${us.toFixed(1).padStart(6)} µs/event  (${Math.round(1e6 / us)} events/s)`)
    console.log(`ingest + fan-out (3 deliveries an event, batches of ${BATCH}), median of ${ROUNDS} interleaved rounds of ${EVENTS_PER_ROUND}, CPU time:`)
    line('1 application', ma)
    line(`one of ${APPS} applications`, mb)
    console.log(`  ratio ${APPS} apps / 1 app: ${(mb / ma).toFixed(3)}  (target ≤ 1.10)`)
    line(`spread evenly over all ${APPS} applications`, mc)
    console.log(`  ratio spread / 1 app: ${(mc / ma).toFixed(3)}  (each batch writes pages all over the per-endpoint and per-application indexes)`)
    line(`first event to each of the ${APPS} applications`, coldUs)
  } finally {
    for (const s of [one, many]) {
      await s.store.close()
      rmSync(s.dir, { recursive: true, force: true })
    }
  }
  const v = await validationCost()
  console.log(`schema validation (Ajv, draft 2020-12, ${v.payloadBytes}-byte payload): ${v.validateUs.toFixed(2)} µs/event`)
  console.log(`  ingest of that payload without a schema ${v.ingestPlainUs.toFixed(1)} µs/event, with ${v.ingestValidatedUs.toFixed(1)} µs/event (1 delivery-less event each)`)
}
