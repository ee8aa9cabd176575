import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openDatabase } from './db.js'
import { createDeliveriesStore } from './deliveries.js'
import { RESPONSE_BODY_LIMIT, type ClaimedDelivery } from '../deliveries.js'
import { listQuery, needsScan, scanQuery } from './delivery-list.js'
import { LIST_SCAN_LIMIT, scanForPage } from '../capped-scan.js'
import { encodeCursor } from '../../lib/cursor.js'
import { insertEndpoint, openTestQueue, row, type TestQueue } from '../../../test/queue-helpers.js'

const NOW = Date.UTC(2026, 0, 1)
const claimOpts = { limit: 100, defaultTimeoutMs: 15_000 }

let q: TestQueue
beforeEach(() => {
  q = openTestQueue()
})
afterEach(() => q.cleanup())

const claim = (now = NOW, extra: Partial<Parameters<TestQueue['deliveries']['claimDue']>[0]> = {}): ClaimedDelivery[] =>
  q.deliveries.claimDue({ ...claimOpts, now, ...extra })
const ids = (rows: { id: string }[]): string[] => rows.map((r) => r.id)
const enqueue = (key: string, extra: Parameters<typeof row>[2] = {}, now = NOW): string =>
  q.deliveries.enqueue(row(key, now, extra), now).id

describe('enqueue', () => {
  it('returns the existing id on a repeated dedup key and wakes only for due rows', () => {
    const first = q.deliveries.enqueue(row('k', NOW), NOW)
    expect(first.created).toBe(true)
    expect(first.id).toMatch(/^dlv_[0-9a-z]{26}$/)
    expect(q.deliveries.enqueue(row('k', NOW), NOW)).toEqual({ id: first.id, created: false })
    expect(q.due.count).toBe(1)
    q.deliveries.enqueue(row('later', NOW, { nextAttemptAt: NOW + 1000 }), NOW)
    expect(q.due.count).toBe(1)
    expect(q.deliveries.get(first.id)).toMatchObject({ status: 'pending', attempts: 0, maxAttempts: 8, notificationId: 'ntf_test', recipient: 'k' })
  })
})

describe('insertDelivered', () => {
  it('writes a finished row no claim takes, unique like enqueue, with one success attempt each', () => {
    const inbox = { channel: 'inbox' as const, payload: '{"title":"t"}' }
    const a = q.deliveries.insertDelivered(row('a', NOW, inbox), NOW)
    const b = q.deliveries.insertDelivered(row('b', NOW, inbox), NOW)
    expect(a.created && b.created).toBe(true)
    expect(q.deliveries.insertDelivered(row('a', NOW, inbox), NOW)).toEqual({ id: a.id, created: false })
    expect(q.deliveries.enqueue(row('a', NOW, inbox), NOW)).toEqual({ id: a.id, created: false })
    expect(q.due.count).toBe(0) // nothing to wake the dispatcher for
    expect(claim(NOW + 60_000)).toEqual([])
    expect(q.deliveries.queueDepth()).toEqual({ pending: 0, in_flight: 0 })
    expect(q.deliveries.get(a.id)).toMatchObject({
      channel: 'inbox', status: 'success', attempts: 1, maxAttempts: 8, claimToken: null, leaseUntil: null,
      lastStatusCode: null, lastError: null, completedAt: NOW, updatedAt: NOW, payload: '{"title":"t"}',
    })
    q.deliveries.logDelivered([a.id, b.id], { startedAt: NOW, durationMs: 2.6 })
    q.deliveries.logDelivered([], { startedAt: NOW, durationMs: 0 })
    for (const id of [a.id, b.id]) {
      expect(q.deliveries.attempts(id)).toMatchObject([
        { deliveryId: id, attempt: 1, startedAt: NOW, durationMs: 3, outcome: 'success', statusCode: null, error: null, responseBody: null },
      ])
    }
    // A finished row like any other: an operator may redeliver it.
    expect(q.deliveries.redeliver(a.id, NOW + 1)).toBe('ok')
    expect(ids(claim(NOW + 1))).toEqual([a.id])
  })
})

describe('claimDue', () => {
  it('two interleaved claimers on separate connections never get the same row', () => {
    const other = openDatabase(q.path)
    try {
      const second = createDeliveriesStore(other)
      for (let i = 0; i < 100; i++) enqueue(`r${i}`)
      const seen = new Map<string, string>()
      let claims = 0
      for (let round = 0; round < 20; round++) {
        const store = round % 2 === 0 ? q.deliveries : second
        const got = store.claimDue({ ...claimOpts, limit: 7, now: NOW })
        if (got.length > 0) claims++
        for (const c of got) {
          expect(seen.has(c.id)).toBe(false)
          seen.set(c.id, c.claimToken)
        }
      }
      expect(seen.size).toBe(100)
      // One fresh token per claim: no two claims share one.
      expect(new Set(seen.values()).size).toBe(claims)
    } finally {
      other.close()
    }
  })

  it('spends the attempt at claim and sets a lease longer than the timeout plus 15 s', () => {
    insertEndpoint(q.db, { id: 'ep_slow', timeoutMs: 60_000 })
    const a = enqueue('a')
    const b = enqueue('b', { endpointId: 'ep_slow' })
    const rows = claim(NOW, { leaseMarginMs: 1 })
    expect(ids(rows)).toEqual([a, b])
    expect(rows.map((r) => [r.status, r.attempts])).toEqual([['in_flight', 1], ['in_flight', 1]])
    expect(rows[0]!.leaseUntil).toBe(NOW + 15_000 + 15_000)
    expect(rows[1]!.leaseUntil).toBe(NOW + 60_000 + 15_000)
    // The rows hold the leases the claim returned (two leases: one statement each).
    expect([a, b].map((id) => q.deliveries.get(id)!.leaseUntil)).toEqual([NOW + 30_000, NOW + 75_000])
    // One fresh token per claim (docs/delivery.md, "The queue").
    expect(rows[0]!.claimToken).toBe(rows[1]!.claimToken)
    expect(rows[0]!.claimToken).toMatch(/^[0-9a-f]{24}$/)
    for (const { eventBody, ...r } of rows) {
      expect(eventBody).toBeNull()
      expect(r).toEqual(q.deliveries.get(r.id))
    }
    expect(claim()).toEqual([])
  })

  it('an idle claim takes no write lock; with due work it needs one', () => {
    const other = openDatabase(q.path)
    try {
      q.db.pragma('busy_timeout = 20')
      other.prepare('BEGIN IMMEDIATE').run()
      expect(claim()).toEqual([])
      other.prepare('ROLLBACK').run()
      enqueue('a')
      other.prepare('BEGIN IMMEDIATE').run()
      expect(() => claim()).toThrow(/locked|busy/i)
      other.prepare('ROLLBACK').run()
      expect(claim()).toHaveLength(1)
    } finally {
      other.close()
    }
  })

  it("reads the event's body with the claim", () => {
    q.db.prepare(`INSERT INTO events (id, type, body, created_at) VALUES ('evt_1', 'test.event', '{"hello":1}', 0)`).run()
    const a = enqueue('a', { eventId: 'evt_1' })
    expect(claim()).toMatchObject([{ id: a, eventId: 'evt_1', eventBody: '{"hello":1}' }])
  })

  it('re-offers a row whose lease expired, keeping the spent attempt; the stale token then misses', () => {
    const id = enqueue('a')
    const [first] = claim()
    expect(claim(first!.leaseUntil - 1)).toEqual([])
    const [second] = claim(first!.leaseUntil)
    expect(second).toMatchObject({ id, attempts: 2 })
    expect(second!.claimToken).not.toBe(first!.claimToken)

    const before = q.deliveries.get(id)
    const stale = q.deliveries.settle([{ id, claimToken: first!.claimToken, outcome: { kind: 'success' }, attempt: { startedAt: NOW, durationMs: 1 } }], NOW)
    expect(stale).toEqual([{ result: 'missed' }])
    expect(q.deliveries.get(id)).toEqual(before)
    expect(q.deliveries.attempts(id)).toEqual([])

    const ok = q.deliveries.settle([{ id, claimToken: second!.claimToken, outcome: { kind: 'success' } }], NOW)
    expect(ok).toEqual([{ result: 'settled', status: 'success', attempts: 2 }])
  })

  it('lists no pending row for a #<channel> key given as an endpoint id', () => {
    enqueue('mail', { channel: 'email' })
    expect(q.deliveries.list({ status: 'pending', endpointId: '#email', limit: 10 }).data).toEqual([])
    expect(q.deliveries.list({ status: 'pending', limit: 10 }).data).toHaveLength(1)
  })

  it('moves exhausted rows to dead instead of claiming them', () => {
    const none = enqueue('zero', { maxAttempts: 0 })
    const used = enqueue('used')
    q.db.prepare('UPDATE deliveries SET attempts = max_attempts WHERE id = ?').run(used)
    const fine = enqueue('fine')
    expect(ids(claim())).toEqual([fine])
    for (const id of [none, used]) {
      expect(q.deliveries.get(id)).toMatchObject({ status: 'dead', lastError: 'attempts_exhausted', completedAt: NOW })
    }
  })

  it('an expired lease on the last attempt ends the row as dead', () => {
    const id = enqueue('a', { maxAttempts: 1 })
    const [c] = claim()
    expect(claim(c!.leaseUntil)).toEqual([])
    expect(q.deliveries.get(id)).toMatchObject({ status: 'dead', lastError: 'lease_expired', attempts: 1 })
  })

  it('skips paused endpoints until they recover, and finishes rows of disabled and deleted ones instead of claiming them', () => {
    insertEndpoint(q.db, { id: 'ep_paused', pausedUntil: NOW + 5_000 })
    insertEndpoint(q.db, { id: 'ep_disabled', disabled: true })
    insertEndpoint(q.db, { id: 'ep_deleted', deletedAt: NOW })
    insertEndpoint(q.db, { id: 'ep_ok' })
    const p = enqueue('p', { endpointId: 'ep_paused' })
    const d = enqueue('d', { endpointId: 'ep_disabled' })
    const x = enqueue('x', { endpointId: 'ep_deleted' })
    const ok = enqueue('ok', { endpointId: 'ep_ok' })
    expect(ids(claim())).toEqual([ok])
    expect(q.deliveries.get(p)).toMatchObject({ status: 'pending', attempts: 0 })
    // Pending rows of a disabled or deleted endpoint would never be claimed (docs/delivery.md).
    expect(q.deliveries.get(d)).toMatchObject({ status: 'dead', attempts: 0, lastError: 'endpoint_disabled', completedAt: NOW })
    expect(q.deliveries.get(x)).toMatchObject({ status: 'cancelled', attempts: 0, lastError: 'endpoint_deleted', completedAt: NOW })
    expect(ids(claim(NOW + 5_000))).toEqual([p])
  })

  it('a retry or release on an endpoint disabled or deleted meanwhile ends the row instead of leaving it pending', () => {
    insertEndpoint(q.db, { id: 'ep_a' })
    insertEndpoint(q.db, { id: 'ep_b' })
    insertEndpoint(q.db, { id: 'ep_c' })
    const a = enqueue('a', { endpointId: 'ep_a' })
    const b = enqueue('b', { endpointId: 'ep_b' })
    const c = enqueue('c', { endpointId: 'ep_c' })
    const rows = claim()
    q.db.prepare(`UPDATE endpoints SET disabled = 1 WHERE id = 'ep_a'`).run()
    q.db.prepare(`UPDATE endpoints SET deleted_at = ? WHERE id = 'ep_b'`).run(NOW)
    const attempt = { startedAt: NOW, durationMs: 5, statusCode: 500, error: 'http_500' }
    const out = q.deliveries.settle(
      rows.map((r) => ({ id: r.id, claimToken: r.claimToken, outcome: r.id === c ? { kind: 'release' as const } : { kind: 'retry' as const, at: NOW + 1000 }, attempt })),
      NOW,
    )
    expect(out.map((o) => (o.result === 'settled' ? o.status : o.result))).toEqual(['dead', 'cancelled', 'pending'])
    expect(q.deliveries.get(a)).toMatchObject({ status: 'dead', lastError: 'endpoint_disabled', completedAt: NOW })
    expect(q.deliveries.get(b)).toMatchObject({ status: 'cancelled', lastError: 'endpoint_deleted', completedAt: NOW })
    expect(q.deliveries.get(c)).toMatchObject({ status: 'pending', completedAt: null })
    // The attempt that failed is still in the log.
    expect(q.deliveries.attempts(a).map((t) => t.statusCode)).toEqual([500])
  })

  it('a repeat that hits the notification key of a row with an event too returns the existing id', () => {
    insertEndpoint(q.db, { id: 'ep_1' })
    for (const id of ['evt_1', 'evt_2']) q.db.prepare(`INSERT INTO events (id, type, body, created_at) VALUES (?, 't', '{}', 0)`).run(id)
    const first = q.deliveries.enqueue(row('u', NOW, { eventId: 'evt_1', endpointId: 'ep_1', notificationId: 'ntf_2' }), NOW)
    expect(first.created).toBe(true)
    expect(q.deliveries.enqueue(row('u', NOW, { eventId: 'evt_2', endpointId: 'ep_1', notificationId: 'ntf_2' }), NOW)).toEqual({ id: first.id, created: false })
  })

  it('redelivers only while the endpoint is enabled and not deleted', () => {
    insertEndpoint(q.db, { id: 'ep_a' })
    const a = enqueue('a', { endpointId: 'ep_a' })
    q.db.prepare(`UPDATE deliveries SET status = 'dead', completed_at = ? WHERE id = ?`).run(NOW, a)
    q.db.prepare(`UPDATE endpoints SET disabled = 1 WHERE id = 'ep_a'`).run()
    expect(q.deliveries.redeliver(a, NOW)).toBe('endpoint_unavailable')
    q.db.prepare(`UPDATE endpoints SET disabled = 0, deleted_at = ? WHERE id = 'ep_a'`).run(NOW)
    expect(q.deliveries.redeliver(a, NOW)).toBe('endpoint_unavailable')
    q.db.prepare(`UPDATE endpoints SET deleted_at = NULL WHERE id = 'ep_a'`).run()
    expect(q.deliveries.redeliver(a, NOW)).toBe('ok')
    expect(q.deliveries.redeliver(a, NOW)).toBe('not_eligible')
  })

  it('limits rows per endpoint with the capacity callback and still reaches other endpoints', () => {
    insertEndpoint(q.db, { id: 'ep_busy' })
    insertEndpoint(q.db, { id: 'ep_free' })
    // A long backlog on one endpoint first: the free endpoint's rows sit far behind it.
    for (let i = 0; i < 300; i++) enqueue(`busy${i}`, { endpointId: 'ep_busy' })
    const free = [0, 1, 2, 3].map((i) => enqueue(`free${i}`, { endpointId: 'ep_free' }))
    const cap = { ep_busy: 2, ep_free: 100 } as Record<string, number>
    const rows = claim(NOW, { limit: 10, capacity: (ep) => cap[ep ?? ""]! })
    expect(rows.filter((r) => r.endpointId === 'ep_busy')).toHaveLength(2)
    expect(ids(rows.filter((r) => r.endpointId === 'ep_free'))).toEqual(free)
    expect(claim(NOW, { excludeEndpoints: ['ep_busy'] })).toEqual([])
  })

  it('honours the ordering barrier per (endpoint, key) on ordered endpoints only', () => {
    insertEndpoint(q.db, { id: 'ep_ord', ordered: true })
    insertEndpoint(q.db, { id: 'ep_any' })
    const k1a = enqueue('k1a', { endpointId: 'ep_ord', orderingKey: 'k1' })
    const k1b = enqueue('k1b', { endpointId: 'ep_ord', orderingKey: 'k1' })
    const k2a = enqueue('k2a', { endpointId: 'ep_ord', orderingKey: 'k2' })
    const k2b = enqueue('k2b', { endpointId: 'ep_ord', orderingKey: 'k2' })
    const k2c = enqueue('k2c', { endpointId: 'ep_ord', orderingKey: 'k2' })
    const free = enqueue('free', { endpointId: 'ep_ord' })
    const u1 = enqueue('u1', { endpointId: 'ep_any', orderingKey: 'k2' })
    const u2 = enqueue('u2', { endpointId: 'ep_any', orderingKey: 'k2' })

    const first = claim()
    expect(ids(first)).toEqual([k1a, k2a, free, u1, u2])
    const succeed = (rows: ClaimedDelivery[]) =>
      q.deliveries.settle(rows.map((r) => ({ id: r.id, claimToken: r.claimToken, outcome: { kind: 'success' } })), NOW)
    // k2a fails and is retried in the future: it keeps blocking k2b and k2c; the rest succeed.
    const k2aToken = first.find((r) => r.id === k2a)!.claimToken
    q.deliveries.settle([{ id: k2a, claimToken: k2aToken, outcome: { kind: 'retry', at: NOW + 60_000 } }], NOW)
    succeed(first.filter((r) => r.id !== k2a))
    const other = enqueue('u3', { endpointId: 'ep_any', orderingKey: 'k2' })
    const second = claim(NOW + 1)
    expect(ids(second)).toEqual([k1b, other])
    succeed(second)
    const [retried] = claim(NOW + 60_000)
    expect(retried!.id).toBe(k2a)
    q.deliveries.settle([{ id: k2a, claimToken: retried!.claimToken, outcome: { kind: 'dead' } }], NOW + 60_000)
    expect(ids(claim(NOW + 60_000))).toEqual([k2b])
    expect(q.deliveries.get(k2c)!.status).toBe('pending')
    // Redelivering the older, finished k2a while k2b is in flight: neither it nor k2c may go
    // until k2b is done, so the key never has two requests in flight.
    expect(q.deliveries.redeliver(k2a, NOW + 60_000)).toBe('ok')
    expect(claim(NOW + 60_000)).toEqual([])
  })
})

describe('settle', () => {
  it('snooze and release give the attempt back; release is due at once', () => {
    const a = enqueue('a')
    const b = enqueue('b')
    const [ca, cb] = claim()
    const wakes = q.due.count
    const res = q.deliveries.settle(
      [
        { id: a, claimToken: ca!.claimToken, outcome: { kind: 'snooze', at: NOW + 30_000 }, attempt: { startedAt: NOW, durationMs: 5, error: 'circuit_open' } },
        { id: b, claimToken: cb!.claimToken, outcome: { kind: 'release' } },
      ],
      NOW,
    )
    expect(res).toEqual([
      { result: 'settled', status: 'pending', attempts: 0 },
      { result: 'settled', status: 'pending', attempts: 0 },
    ])
    expect(q.due.count).toBe(wakes + 1)
    expect(q.deliveries.get(a)).toMatchObject({ nextAttemptAt: NOW + 30_000, claimToken: null, leaseUntil: null })
    expect(q.deliveries.attempts(a)).toMatchObject([{ attempt: 1, outcome: 'snooze', error: 'circuit_open' }])
    expect(q.deliveries.attempts(b)).toEqual([])
    expect(ids(claim())).toEqual([b])
  })

  it('retry schedules the row; a retry on the last attempt makes it dead', () => {
    const id = enqueue('a', { maxAttempts: 2 })
    let [c] = claim()
    const r1 = q.deliveries.settle([{ id, claimToken: c!.claimToken, outcome: { kind: 'retry', at: NOW + 1_000 }, attempt: { startedAt: NOW, durationMs: 3, statusCode: 503, error: 'http_503' } }], NOW)
    expect(r1).toEqual([{ result: 'settled', status: 'pending', attempts: 1 }])
    expect(claim(NOW + 999)).toEqual([])
    ;[c] = claim(NOW + 1_000)
    const r2 = q.deliveries.settle([{ id, claimToken: c!.claimToken, outcome: { kind: 'retry', at: NOW + 9_000 }, attempt: { startedAt: NOW + 1_000, durationMs: 3, statusCode: 500, error: 'http_500' } }], NOW + 1_000)
    expect(r2).toEqual([{ result: 'settled', status: 'dead', attempts: 2 }])
    expect(q.deliveries.get(id)).toMatchObject({ status: 'dead', lastStatusCode: 500, lastError: 'http_500', completedAt: NOW + 1_000 })
    expect(q.deliveries.attempts(id).map((a) => [a.attempt, a.outcome, a.statusCode])).toEqual([
      [1, 'retry', 503],
      [2, 'dead', 500],
    ])
  })

  it('logs attempts with the response body capped at 16 KiB', () => {
    const id = enqueue('a')
    const [c] = claim()
    q.deliveries.settle([{ id, claimToken: c!.claimToken, outcome: { kind: 'success' }, attempt: { startedAt: NOW, durationMs: 12.6, statusCode: 200, responseBody: 'x'.repeat(40_000) } }], NOW + 13)
    const [a] = q.deliveries.attempts(id)
    expect(a).toMatchObject({ deliveryId: id, attempt: 1, outcome: 'success', statusCode: 200, durationMs: 13, error: null })
    expect(a!.responseBody).toHaveLength(RESPONSE_BODY_LIMIT)
    expect(q.deliveries.get(id)).toMatchObject({ status: 'success', completedAt: NOW + 13, lastStatusCode: 200, lastError: null })
  })
})

describe('settle batches', () => {
  it('settles a mixed batch in input order; a stale success misses and logs nothing', () => {
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((k) => enqueue(k))
    const rows = claim()
    const token = (id: string) => rows.find((r) => r.id === id)!.claimToken
    const body = 'ünïcødé "quoted" \\ back\nslash 🎉'
    const res = q.deliveries.settle(
      [
        { id: a!, claimToken: token(a!), outcome: { kind: 'success' }, attempt: { startedAt: NOW, durationMs: 2, statusCode: 204, responseBody: body } },
        { id: b!, claimToken: 'stale', outcome: { kind: 'success' }, attempt: { startedAt: NOW, durationMs: 2, statusCode: 200 } },
        { id: c!, claimToken: token(c!), outcome: { kind: 'retry', at: NOW + 5 }, attempt: { startedAt: NOW, durationMs: 1, error: 'timeout' } },
        { id: d!, claimToken: token(d!), outcome: { kind: 'success' } },
      ],
      NOW + 3,
    )
    expect(res).toEqual([
      { result: 'settled', status: 'success', attempts: 1 },
      { result: 'missed' },
      { result: 'settled', status: 'pending', attempts: 1 },
      { result: 'settled', status: 'success', attempts: 1 },
    ])
    expect(q.deliveries.attempts(a!)).toMatchObject([{ attempt: 1, outcome: 'success', statusCode: 204, responseBody: body, error: null, durationMs: 2 }])
    expect(q.deliveries.get(a!)).toMatchObject({ status: 'success', lastStatusCode: 204, claimToken: null, leaseUntil: null, completedAt: NOW + 3 })
    expect(q.deliveries.get(b!)).toMatchObject({ status: 'in_flight' })
    expect(q.deliveries.attempts(b!)).toEqual([])
    expect(q.deliveries.attempts(d!)).toEqual([])
    expect(q.deliveries.get(d!)).toMatchObject({ status: 'success', lastStatusCode: null })
  })
})

describe('digest groups', () => {
  it('holdPending moves pending rows out of reach of claims, and leaves claimed rows alone', () => {
    const [a, b, c] = ['a', 'b', 'c'].map((k) => enqueue(k, { groupKey: 'g' }))
    const [first] = claim(NOW, { limit: 1 })
    expect(first!.id).toBe(a)
    expect(q.deliveries.holdPending([a!, b!, c!], NOW + 60_000, NOW)).toBe(2)
    expect(claim(NOW + 40_000)).toEqual([])
    expect(q.deliveries.get(a!)).toMatchObject({ status: 'in_flight' })
    // Held members are not due yet, so a digest sent meanwhile leaves them alone.
    expect(q.deliveries.pendingInGroup('g', NOW + 59_999)).toEqual([])
    expect(q.deliveries.pendingInGroup('g', NOW + 60_000).map((d) => [d.id, d.nextAttemptAt])).toEqual([
      [b, NOW + 60_000],
      [c, NOW + 60_000],
    ])
    q.deliveries.settle([{ id: a!, claimToken: first!.claimToken, outcome: { kind: 'success' } }], NOW)
    expect(ids(claim(NOW + 60_000))).toEqual([b, c])
  })
})

describe('operator actions', () => {
  it('redeliver: only terminal rows, attempts reset, history kept', () => {
    const id = enqueue('a')
    expect(q.deliveries.redeliver(id, NOW)).toBe('not_eligible')
    expect(q.deliveries.redeliver('dlv_missing', NOW)).toBe('not_found')
    const [c] = claim()
    expect(q.deliveries.redeliver(id, NOW)).toBe('not_eligible')
    q.deliveries.settle([{ id, claimToken: c!.claimToken, outcome: { kind: 'dead' }, attempt: { startedAt: NOW, durationMs: 1, statusCode: 400 } }], NOW)
    const wakes = q.due.count
    expect(q.deliveries.redeliver(id, NOW + 5)).toBe('ok')
    expect(q.due.count).toBe(wakes + 1)
    expect(q.deliveries.get(id)).toMatchObject({ status: 'pending', attempts: 0, nextAttemptAt: NOW + 5, completedAt: null })
    expect(q.deliveries.attempts(id)).toHaveLength(1)
    expect(ids(claim(NOW + 5))).toEqual([id])
  })

  it('recover brings back dead rows of one endpoint created in [since, until)', () => {
    insertEndpoint(q.db, { id: 'ep_a' })
    insertEndpoint(q.db, { id: 'ep_b' })
    const made = [0, 1, 2, 3].map((i) => enqueue(`a${i}`, { endpointId: 'ep_a' }, NOW + i * 1000))
    const otherEp = enqueue('b0', { endpointId: 'ep_b' }, NOW + 1000)
    q.db.prepare(`UPDATE deliveries SET status = 'dead', attempts = 8, completed_at = ?`).run(NOW)
    expect(q.deliveries.recover('ep_a', NOW + 1000, NOW + 3000, NOW + 10_000)).toBe(2)
    expect(made.map((id) => q.deliveries.get(id)!.status)).toEqual(['dead', 'pending', 'pending', 'dead'])
    expect(q.deliveries.get(made[1]!)).toMatchObject({ attempts: 0, nextAttemptAt: NOW + 10_000 })
    expect(q.deliveries.get(otherEp)!.status).toBe('dead')
  })

  it('cancelForEndpoint cancels pending rows of that endpoint only; killPending makes them dead', () => {
    insertEndpoint(q.db, { id: 'ep_a' })
    insertEndpoint(q.db, { id: 'ep_b' })
    const inFlight = enqueue('a0', { endpointId: 'ep_a' })
    claim()
    const pending = [1, 2].map((i) => enqueue(`a${i}`, { endpointId: 'ep_a', nextAttemptAt: NOW + 1000 }))
    const b = enqueue('b0', { endpointId: 'ep_b' })
    expect(q.deliveries.cancelForEndpoint('ep_a', NOW)).toBe(2)
    expect(pending.map((id) => q.deliveries.get(id)!.status)).toEqual(['cancelled', 'cancelled'])
    expect(q.deliveries.get(pending[0]!)).toMatchObject({ lastError: 'endpoint_deleted', completedAt: NOW })
    expect(q.deliveries.get(inFlight)!.status).toBe('in_flight')
    expect(q.deliveries.killPendingForEndpoint('ep_b', 'endpoint_disabled', NOW)).toBe(1)
    expect(q.deliveries.get(b)).toMatchObject({ status: 'dead', lastError: 'endpoint_disabled' })
  })
})

describe('settle keeps the last status code of the last attempt', () => {
  it('a success without a status code (inbox, email) clears an earlier failure\'s', () => {
    const id = enqueue('mail', { channel: 'email' })
    const [first] = claim(NOW)
    q.deliveries.settle([{ id, claimToken: first!.claimToken, outcome: { kind: 'retry', at: NOW }, attempt: { startedAt: NOW, durationMs: 1, statusCode: 451, error: 'try later' } }], NOW)
    expect(q.deliveries.get(id)).toMatchObject({ status: 'pending', lastStatusCode: 451 })
    const [second] = claim(NOW)
    q.deliveries.settle([{ id, claimToken: second!.claimToken, outcome: { kind: 'success' }, attempt: { startedAt: NOW, durationMs: 1 } }], NOW)
    expect(q.deliveries.get(id)).toMatchObject({ status: 'success', lastStatusCode: null, lastError: null })
  })
})

describe('reads', () => {
  it('lists newest first with cursors and filters', () => {
    insertEndpoint(q.db, { id: 'ep_a' })
    const made: string[] = []
    for (let i = 0; i < 25; i++) made.push(enqueue(`r${i}`, i % 5 === 0 ? { endpointId: 'ep_a' } : {}))
    const newest = [...made].reverse()
    const p1 = q.deliveries.list({ limit: 10 })
    const p2 = q.deliveries.list({ limit: 10, cursor: p1.next_cursor })
    const p3 = q.deliveries.list({ limit: 10, cursor: p2.next_cursor })
    expect([...ids(p1.data), ...ids(p2.data), ...ids(p3.data)]).toEqual(newest)
    expect(p3.next_cursor).toBeNull()
    expect(ids(q.deliveries.list({ limit: 50, endpointId: 'ep_a' }).data)).toEqual(newest.filter((_, i) => (24 - i) % 5 === 0))
    expect(q.deliveries.list({ limit: 50, status: 'success' }).data).toEqual([])
    expect(ids(q.deliveries.list({ limit: 3, cursor: 'not a cursor!' }).data)).toEqual(newest.slice(0, 3))
  })

  it('lists each status newest first, paging through pending rows from the queue index', () => {
    insertEndpoint(q.db, { id: 'ep_a' })
    const made = Array.from({ length: 12 }, (_, i) => enqueue(`r${i}`, { endpointId: i % 2 ? 'ep_a' : null, eventType: i % 3 ? 'a' : 'b' }))
    const setStatus = q.db.prepare('UPDATE deliveries SET status = ?, completed_at = ? WHERE id = ?')
    for (const i of [0, 5]) setStatus.run('dead', NOW, made[i])
    for (const i of [3]) setStatus.run('cancelled', NOW, made[i])
    for (const i of [1, 7]) setStatus.run('success', NOW, made[i])
    const pending = made.filter((_, i) => ![0, 1, 3, 5, 7].includes(i)).reverse()
    const all = (f: Omit<Parameters<typeof q.deliveries.list>[0], 'limit' | 'cursor'>): string[] => {
      const out: string[] = []
      for (let cursor: string | null = null; ; ) {
        const page = q.deliveries.list({ ...f, limit: 2, cursor })
        out.push(...ids(page.data))
        if (!(cursor = page.next_cursor)) return out
      }
    }
    expect(all({ status: 'pending' })).toEqual(pending)
    expect(all({ status: 'pending', endpointId: 'ep_a' })).toEqual(pending.filter((id) => made.indexOf(id) % 2 === 1))
    expect(all({ status: 'pending', eventType: 'b' })).toEqual(pending.filter((id) => made.indexOf(id) % 3 === 0))
    expect(all({ status: 'dead' })).toEqual([made[5], made[0]])
    expect(all({ status: 'cancelled' })).toEqual([made[3]])
    expect(all({ status: 'success', endpointId: 'ep_a' })).toEqual([made[7], made[1]])
  })

  it('reads at most LIST_SCAN_LIMIT rows for a page filtered by event type or success, and continues where it stopped', () => {
    insertEndpoint(q.db, { id: 'ep_a' })
    const [oldest, newest] = q.db.transaction(() => {
      const first = enqueue('rare0', { eventType: 'rare', endpointId: 'ep_a' })
      for (let i = 0; i < LIST_SCAN_LIMIT + 200; i++) enqueue(`c${i}`, { eventType: 'common', endpointId: i % 100 ? 'ep_a' : null })
      return [first, enqueue('rare1', { eventType: 'rare', endpointId: 'ep_a' })]
    })()
    q.db.prepare(`UPDATE deliveries SET status = 'success', completed_at = ? WHERE event_type = 'rare'`).run(NOW)
    for (const f of [{ eventType: 'rare' }, { status: 'success' as const }, { eventType: 'rare', endpointId: 'ep_a', status: 'success' as const }]) {
      const first = q.deliveries.list({ ...f, limit: 10 })
      // The newest row, then the cap: the oldest one is LIST_SCAN_LIMIT + 200 rows further.
      expect(ids(first.data)).toEqual([newest])
      expect(first.next_cursor).not.toBeNull()
      const second = q.deliveries.list({ ...f, limit: 10, cursor: first.next_cursor })
      expect(ids(second.data)).toEqual([oldest])
      expect(second.next_cursor).toBeNull()
    }
    // A full page stops reading at once and pages by its last row as usual.
    const common = q.deliveries.list({ eventType: 'common', limit: 3 })
    expect(common.data.map((d) => d.eventType)).toEqual(['common', 'common', 'common'])
    expect(ids(q.deliveries.list({ eventType: 'common', limit: 2, cursor: common.next_cursor }).data)).toHaveLength(2)
    expect(scanForPage([['a', 0], ['b', 1], ['c', 1]] as const, 1)).toEqual({ hits: ['b', 'c'], resumeAfter: null })
    // Exactly LIST_SCAN_LIMIT rows left: the page ends the list (no empty page after it).
    const misses = (n: number): [number, number][] => Array.from({ length: n }, (_, i) => [i, 0])
    expect(scanForPage(misses(LIST_SCAN_LIMIT), 10)).toEqual({ hits: [], resumeAfter: null })
    expect(scanForPage(misses(LIST_SCAN_LIMIT + 1), 10)).toEqual({ hits: [], resumeAfter: LIST_SCAN_LIMIT - 1 })
  })

  it('lists rare statuses from their partial indexes, never by walking the whole table', () => {
    const plan = (f: Parameters<typeof listQuery>[0]): string => {
      const { sql, params } = listQuery(f)
      return (q.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail).join(' | ')
    }
    expect(plan({ status: 'pending', limit: 10 })).toMatch(/COVERING INDEX deliveries_due/)
    expect(plan({ status: 'pending', endpointId: 'ep_a', limit: 10, cursor: encodeCursor('dlv_x') })).toMatch(/USING (COVERING )?INDEX deliveries_endpoint_due \(<expr>=\?/)
    expect(plan({ status: 'in_flight', limit: 10 })).toMatch(/deliveries_leases/)
    expect(plan({ status: 'dead', limit: 10 })).toMatch(/deliveries_dead\b/)
    expect(plan({ status: 'dead', endpointId: 'ep_a', limit: 10 })).toMatch(/deliveries_dead_endpoint/)
    expect(plan({ status: 'cancelled', endpointId: 'ep_a', limit: 10 })).toMatch(/deliveries_(cancelled|endpoint)\b/)
    expect(plan({ status: 'pending', eventId: 'evt_x', limit: 10 })).toMatch(/deliveries_event/)
    const scanPlan = (f: Parameters<typeof scanQuery>[0]): string => {
      const { sql, params } = scanQuery(f)
      return (q.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail).join(' | ')
    }
    // A capped scan walks an index in id order: no sort, so it reads LIST_SCAN_LIMIT rows at most.
    expect(scanPlan({ eventType: 'a', limit: 10 })).toMatch(/^SCAN deliveries USING INDEX sqlite_autoindex_deliveries_1$/)
    expect(scanPlan({ eventType: 'a', endpointId: 'ep_a', limit: 10 })).toMatch(/^SEARCH deliveries USING INDEX deliveries_endpoint \(endpoint_id=\?\)$/)
    expect(scanPlan({ eventType: 'a', status: 'dead', limit: 10 })).toMatch(/^SCAN deliveries USING INDEX deliveries_dead$/)
    expect(scanPlan({ eventType: 'a', status: 'cancelled', endpointId: 'ep_a', limit: 10 })).not.toMatch(/TEMP B-TREE/)
    expect(scanPlan({ status: 'success', endpointId: 'ep_a', cursor: encodeCursor('dlv_x'), limit: 10 })).not.toMatch(/TEMP B-TREE/)
    // Queued rows (whose index is in due order) are filtered by type in one sorted page instead.
    expect(needsScan({ eventType: 'a', status: 'pending', limit: 10 })).toBe(false)
    expect(needsScan({ eventType: 'a', status: 'in_flight', limit: 10 })).toBe(false)
    expect(plan({ eventType: 'a', status: 'pending', limit: 10 })).toMatch(/deliveries_due/)
  })

  it('counts by status and reports the oldest pending time', () => {
    expect(q.deliveries.oldestPendingAt()).toBeNull()
    enqueue('a', { nextAttemptAt: NOW + 500 })
    enqueue('b')
    enqueue('c')
    claim(NOW, { limit: 1 })
    expect(q.deliveries.countByStatus()).toEqual({ pending: 2, in_flight: 1, success: 0, dead: 0, cancelled: 0 })
    expect(q.deliveries.oldestPendingAt()).toBe(NOW)
    insertEndpoint(q.db, { id: 'ep_a' })
    insertEndpoint(q.db, { id: 'ep_b' })
    enqueue('ea1', { endpointId: 'ep_a' })
    enqueue('ea2', { endpointId: 'ep_a', nextAttemptAt: NOW + 9_000 })
    enqueue('eb1', { endpointId: 'ep_b' })
    claim(NOW, { excludeEndpoints: ['ep_a'] })
    expect(q.deliveries.pendingByEndpoint()).toEqual({ ep_a: 2 })
  })
})
