import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { originKey } from '../deliveries.js'
import { deliveryIdOf, requestIdOf, type NewRequest } from '../requests.js'
import { BACKENDS, coreBackend, pgFamilies, testPool, type CoreFamilies } from '../../../test/support/pg-core-backends.js'

const NOW = Date.UTC(2026, 0, 1)
const DAY = 86_400_000

const req = (extra: Partial<NewRequest> = {}): NewRequest => ({
  appId: 'default',
  method: 'POST',
  url: 'https://a.example/x',
  headers: {},
  body: '{"a":1}',
  bodyJson: true,
  signingSecret: null,
  timeoutMs: 5_000,
  retrySchedule: null,
  source: null,
  refId: null,
  dedupKey: null,
  deliverAt: NOW,
  targetKey: originKey('https://a.example'),
  maxAttempts: 8,
  ...extra,
})

describe.each(BACKENDS)('requests contract (%s)', (kind) => {
  const backend = coreBackend(kind)
  let f: CoreFamilies
  beforeAll(() => backend.setup())
  afterAll(() => backend.teardown())
  beforeEach(async () => {
    f = await backend.fresh()
  })
  const create = (extra: Partial<NewRequest> = {}, now = NOW) => f.requests.create(req(extra), now)

  it('stores the target and reads the request back with its delivery', async () => {
    const { deliveryId, created } = await create({
      headers: { 'x-a': '1' }, signingSecret: 'whsec_s', retrySchedule: [1000], source: 'billing', refId: 'inv_1', dedupKey: 'd1', deliverAt: NOW + 5, appId: 'app_r',
    })
    expect(created).toBe(true)
    expect(deliveryIdOf(requestIdOf(deliveryId))).toBe(deliveryId)
    expect(await f.requests.target(deliveryId)).toEqual({
      method: 'POST', url: 'https://a.example/x', headers: { 'x-a': '1' }, body: '{"a":1}', bodyJson: true, signingSecret: 'whsec_s', timeoutMs: 5_000, retrySchedule: [1000],
    })
    const got = await f.requests.get(deliveryId)
    expect(got).toEqual({
      id: requestIdOf(deliveryId), appId: 'app_r', method: 'POST', url: 'https://a.example/x', headers: { 'x-a': '1' }, body: '{"a":1}', bodyJson: true,
      signingSecret: 'whsec_s', timeoutMs: 5_000, retrySchedule: [1000], source: 'billing', refId: 'inv_1', dedupKey: 'd1', deliverAt: NOW + 5, createdAt: NOW,
      delivery: await f.deliveries.get(deliveryId),
    })
    expect(got!.delivery).toMatchObject({ channel: 'request', eventType: 'POST', targetKey: '@https://a.example', nextAttemptAt: NOW + 5, appId: 'app_r' })
    expect(await f.requests.target('dlv_missing')).toBeNull()
    expect(await f.requests.get('dlv_missing')).toBeNull()
    expect(await f.requests.isRequest(deliveryId)).toBe(true)
    expect(await f.requests.isRequest('dlv_missing')).toBe(false)
  })

  it('enqueues a request delivery keyed by its origin, leased for its own timeout', async () => {
    const { deliveryId } = await create({ timeoutMs: 42_000 })
    const [c] = await f.deliveries.claimDue({ limit: 10, now: NOW, defaultTimeoutMs: 15_000, leaseMarginMs: 30_000 })
    expect(c).toMatchObject({ id: deliveryId, channel: 'request', targetKey: '@https://a.example', endpointId: null })
    expect(c!.leaseUntil).toBe(NOW + 30_000 + 42_000)
  })

  it("an origin's capacity binds only its own rows", async () => {
    for (let i = 0; i < 3; i++) await create()
    for (let i = 0; i < 3; i++) await create({ url: 'https://b.example/', targetKey: originKey('https://b.example') })
    const claimed = await f.deliveries.claimDue({ limit: 10, now: NOW, defaultTimeoutMs: 15_000, capacity: (k) => (k === '@https://a.example' ? 0 : 10) })
    expect(claimed.map((c) => c.targetKey)).toEqual(['@https://b.example', '@https://b.example', '@https://b.example'])
  })

  it('dedups per (app, key) and only there', async () => {
    const a = await create({ dedupKey: 'k' })
    expect(await create({ dedupKey: 'k', url: 'https://c.example/' })).toEqual({ deliveryId: a.deliveryId, created: false })
    expect((await create({ dedupKey: 'k', appId: 'other' })).created).toBe(true)
    expect((await create({ dedupKey: null })).created).toBe(true)
    expect(await f.deliveries.countByStatus()).toMatchObject({ pending: 3 })
  })

  it('cancels only while pending, and every pending request of a deleted application', async () => {
    const { deliveryId } = await create({ deliverAt: NOW + DAY })
    expect(await f.requests.cancel(deliveryId, NOW)).toBe('ok')
    expect((await f.requests.get(deliveryId))!.delivery).toMatchObject({ status: 'cancelled', completedAt: NOW, lastError: 'cancelled' })
    expect(await f.requests.cancel(deliveryId, NOW)).toBe('not_eligible')
    expect(await f.requests.cancel('dlv_00000000000000000000000000', NOW)).toBe('not_found')
    const other = await create()
    await f.deliveries.claimDue({ limit: 10, now: NOW, defaultTimeoutMs: 15_000 })
    expect(await f.requests.cancel(other.deliveryId, NOW)).toBe('not_eligible')
    expect(await f.requests.countByStatus()).toEqual({ pending: 0, in_flight: 1, success: 0, dead: 0, cancelled: 1 })
    await create({ appId: 'app_gone', deliverAt: NOW + DAY })
    await create({ appId: 'app_gone', deliverAt: NOW + DAY })
    await create({ appId: 'app_kept', deliverAt: NOW + DAY })
    expect(await f.requests.cancelForApp('app_gone', NOW + 1)).toBe(2)
    expect(await f.requests.cancelForApp('default', NOW + 1)).toBe(0)
    expect(await f.requests.countByStatus()).toEqual({ pending: 1, in_flight: 1, success: 0, dead: 0, cancelled: 3 })
  })

  it('lists newest first with label and status filters and cursors', async () => {
    const made: string[] = []
    for (let i = 0; i < 7; i++) made.push((await create({ source: i % 2 ? 'odd' : 'even', refId: `ref${i % 3}`, appId: i === 6 ? 'app_6' : 'default' })).deliveryId)
    await f.requests.cancel(made[4]!, NOW)
    const all: string[] = []
    for (let cursor: string | null = null; ; ) {
      const page = await f.requests.list({ limit: 3, cursor })
      all.push(...page.data.map((r) => r.id))
      if (!(cursor = page.next_cursor)) break
    }
    expect(all).toEqual([...made].reverse().map(requestIdOf))
    expect((await f.requests.list({ limit: 10, source: 'odd' })).data.map((r) => r.delivery.id)).toEqual([made[5], made[3], made[1]])
    expect((await f.requests.list({ limit: 10, refId: 'ref0' })).data.map((r) => r.delivery.id)).toEqual([made[6], made[3], made[0]])
    expect((await f.requests.list({ limit: 10, appId: 'app_6' })).data.map((r) => r.delivery.id)).toEqual([made[6]])
    expect((await f.requests.list({ limit: 10, status: 'cancelled' })).data.map((r) => r.delivery.id)).toEqual([made[4]])
    // A delivery cursor is not a request cursor.
    expect((await f.requests.list({ limit: 1, cursor: Buffer.from(made[0]!).toString('base64url') })).data.map((r) => r.delivery.id)).toEqual([made[6]])
  })

  if (kind === 'postgres') it('two nodes creating the same (app, dedup key) at once store one request, and both answer with it', async () => {
    const pools = [testPool(backend.url(), 2), testPool(backend.url(), 2)]
    try {
      for (let round = 0; round < 5; round++) {
        const out = await Promise.all(pools.map((p) => pgFamilies(p, { count: 0 }).requests.create(req({ dedupKey: `same-${round}` }), NOW)))
        expect(out[0]!.deliveryId).toBe(out[1]!.deliveryId)
        expect(out.filter((o) => o.created)).toHaveLength(1)
      }
      expect(await f.requests.countByStatus()).toMatchObject({ pending: 5 })
      expect(await f.all('SELECT count(*) AS n FROM deliveries')).toEqual([{ n: 5 }])
    } finally {
      for (const p of pools) await p.end()
    }
  })
})
