import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { tempSqliteStore } from '../../../test/helpers.js'
import { CLAIM_SQL } from './delivery-claim-sql.js'
import { originKey } from '../deliveries.js'
import type { SqliteStore } from './index.js'
import { deliveryIdOf, requestIdOf, type NewRequest } from '../requests.js'
import { requestListQuery } from './requests.js'
import { sweepRetention } from './retention.js'

const NOW = Date.UTC(2026, 0, 1)
const DAY = 86_400_000

let store: SqliteStore
let cleanup: () => void
beforeEach(() => {
  ;({ store, cleanup } = tempSqliteStore())
})
afterEach(() => cleanup())

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
const create = (extra: Partial<NewRequest> = {}, now = NOW) => store.tx(() => store.requests.create(req(extra), now))

describe('requests store', () => {
  it('maps ids both ways', () => {
    const { deliveryId } = create()
    expect(deliveryIdOf(requestIdOf(deliveryId))).toBe(deliveryId)
    expect(deliveryIdOf('dlv_x')).toBeNull()
    expect(deliveryIdOf('req_short')).toBeNull()
  })

  it('enqueues a request delivery keyed by its origin, leased for its own timeout', () => {
    const { deliveryId } = create({ timeoutMs: 42_000 })
    const [c] = store.deliveries.claimDue({ limit: 10, now: NOW, defaultTimeoutMs: 15_000, leaseMarginMs: 30_000 })
    expect(c).toMatchObject({ id: deliveryId, channel: 'request', targetKey: '@https://a.example', endpointId: null })
    expect(c!.leaseUntil).toBe(NOW + 30_000 + 42_000)
    expect(store.requests.target(deliveryId)).toMatchObject({ method: 'POST', url: 'https://a.example/x', body: '{"a":1}', bodyJson: true, timeoutMs: 42_000 })
  })

  it("an origin's capacity binds only its own rows", () => {
    for (let i = 0; i < 3; i++) create()
    for (let i = 0; i < 3; i++) create({ url: 'https://b.example/', targetKey: originKey('https://b.example') })
    const claimed = store.deliveries.claimDue({ limit: 10, now: NOW, defaultTimeoutMs: 15_000, capacity: (k) => (k === '@https://a.example' ? 0 : 10) })
    expect(claimed.map((c) => c.targetKey)).toEqual(['@https://b.example', '@https://b.example', '@https://b.example'])
  })

  it('dedups per (app, key) and only there', () => {
    const a = create({ dedupKey: 'k' })
    expect(create({ dedupKey: 'k', url: 'https://c.example/' })).toEqual({ deliveryId: a.deliveryId, created: false })
    expect(create({ dedupKey: 'k', appId: 'other' }).created).toBe(true)
    expect(create({ dedupKey: null }).created).toBe(true)
  })

  it('cancels only while pending', () => {
    const { deliveryId } = create({ deliverAt: NOW + DAY })
    expect(store.requests.cancel(deliveryId, NOW)).toBe('ok')
    expect(store.requests.get(deliveryId)!.delivery).toMatchObject({ status: 'cancelled', completedAt: NOW })
    expect(store.requests.cancel(deliveryId, NOW)).toBe('not_eligible')
    expect(store.requests.cancel('dlv_00000000000000000000000000', NOW)).toBe('not_found')
    const other = create()
    store.deliveries.claimDue({ limit: 10, now: NOW, defaultTimeoutMs: 15_000 })
    expect(store.requests.cancel(other.deliveryId, NOW)).toBe('not_eligible')
    expect(store.requests.countByStatus()).toMatchObject({ cancelled: 1, in_flight: 1 })
  })

  it('retention removes a request with its delivery', () => {
    const { deliveryId } = create({ deliverAt: NOW + DAY })
    store.requests.cancel(deliveryId, NOW)
    const r = sweepRetention(store, { now: NOW + 31 * DAY, successMs: 7 * DAY, deadMs: 30 * DAY, inboxMs: 90 * DAY, eventsMs: 7 * DAY })
    expect(r.deliveries).toBe(1)
    expect(store.requests.get(deliveryId)).toBeNull()
    expect(store.db.prepare('SELECT count(*) FROM requests').pluck().get()).toBe(0)
  })

  it('reads label filters through their indexes, and the claim keys by origin through deliveries_endpoint_due', () => {
    const plan = (sql: string, params: unknown[]) =>
      (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail).join('\n')
    const q = (f: Parameters<typeof requestListQuery>[0]) => requestListQuery(f)
    expect(plan(q({ source: 's', limit: 10 }).sql, q({ source: 's', limit: 10 }).params)).toMatch(/requests_source/)
    expect(plan(q({ refId: 'r', limit: 10 }).sql, q({ refId: 'r', limit: 10 }).params)).toMatch(/requests_ref/)
    expect(plan(q({ appId: 'a', limit: 10 }).sql, q({ appId: 'a', limit: 10 }).params)).toMatch(/requests_app/)
    const ofKey = (store.db.prepare(`EXPLAIN QUERY PLAN ${CLAIM_SQL.ofKey}`).all({ key: '@https://a.example', now: NOW, margin: 0, defaultTimeout: 0, channelTimeouts: '{}', afterAt: 0, afterId: '' }) as { detail: string }[]).map((r) => r.detail).join('\n')
    expect(ofKey).toMatch(/deliveries_endpoint_due \(<expr>=\?/)
  })
})
