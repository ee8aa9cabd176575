import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { claimedOf, RESPONSE_BODY_LIMIT, ROW_ATTEMPT_BODY_LIMIT, WAITING_IN_ORDER, type ClaimedDelivery, type ClaimOptions, type NewDelivery } from '../deliveries.js'
import { BACKENDS, coreBackend, type CoreFamilies } from '../../../test/support/pg-core-backends.js'
import { row } from '../../../test/queue-helpers.js'

const NOW = Date.UTC(2026, 0, 1)
const claimOpts = { limit: 100, defaultTimeoutMs: 15_000 }
const ids = (rows: { id: string }[]): string[] => rows.map((r) => r.id)

/** Endpoint columns a test may set (the contract tests' insertEndpoint of test/queue-helpers.ts). */
interface EndpointFixture {
  id: string
  ordered?: boolean
  disabled?: boolean
  pausedUntil?: number | null
  deletedAt?: number | null
  timeoutMs?: number
}

describe.each(BACKENDS)('deliveries contract (%s)', (kind) => {
  const backend = coreBackend(kind)
  let f: CoreFamilies
  beforeAll(() => backend.setup())
  afterAll(() => backend.teardown())
  beforeEach(async () => {
    f = await backend.fresh()
  })

  const claim = (now = NOW, extra: Partial<ClaimOptions> = {}): Promise<ClaimedDelivery[]> => f.deliveries.claimDue({ ...claimOpts, now, ...extra })
  const enqueue = async (key: string, extra: Partial<NewDelivery> = {}, now = NOW): Promise<string> => (await f.deliveries.enqueue(row(key, now, extra), now)).id
  const insertEndpoint = (e: EndpointFixture): Promise<void> =>
    f.exec(
      `INSERT INTO endpoints (id, url, secret, ordered, disabled, paused_until, deleted_at, timeout_ms, created_at, updated_at)
       VALUES (?, 'https://example.com/hook', 'whsec_test', ?, ?, ?, ?, ?, 0, 0)`,
      [e.id, e.ordered ? 1 : 0, e.disabled ? 1 : 0, e.pausedUntil ?? null, e.deletedAt ?? null, e.timeoutMs ?? 15_000],
    )
  const insertEvent = (id: string, body = '{}'): Promise<void> => f.exec(`INSERT INTO events (id, type, body, created_at) VALUES (?, 'test.event', ?, 0)`, [id, body])
  const succeed = (rows: ClaimedDelivery[], now = NOW) => f.deliveries.settle(rows.map((r) => ({ id: r.id, claimToken: r.claimToken, outcome: { kind: 'success' as const } })), now)

  describe('enqueue', () => {
    it('returns the existing id on a repeated dedup key and wakes only for due rows', async () => {
      const first = await f.deliveries.enqueue(row('k', NOW), NOW)
      expect(first.created).toBe(true)
      expect(first.id).toMatch(/^dlv_[0-9a-z]{26}$/)
      expect(await f.deliveries.enqueue(row('k', NOW), NOW)).toEqual({ id: first.id, created: false })
      expect(f.due.count).toBe(1)
      await f.deliveries.enqueue(row('later', NOW, { nextAttemptAt: NOW + 1000 }), NOW)
      expect(f.due.count).toBe(1)
      expect(await f.deliveries.get(first.id)).toEqual({
        id: first.id, appId: 'default', channel: 'webhook', eventId: null, endpointId: null, notificationId: 'ntf_test', recipient: 'k',
        eventType: 'test.event', orderingKey: null, payload: null, groupKey: null, status: 'pending', attempts: 0, maxAttempts: 8,
        nextAttemptAt: NOW, claimToken: null, leaseUntil: null, lastStatusCode: null, lastError: null, createdAt: NOW, updatedAt: NOW,
        completedAt: null, targetKey: null,
      })
    })

    it('a repeat that hits the notification key of a row with an event too returns the existing id', async () => {
      await insertEndpoint({ id: 'ep_1' })
      for (const id of ['evt_1', 'evt_2']) await insertEvent(id)
      const first = await f.deliveries.enqueue(row('u', NOW, { eventId: 'evt_1', endpointId: 'ep_1', notificationId: 'ntf_2' }), NOW)
      expect(first.created).toBe(true)
      expect(await f.deliveries.enqueue(row('u', NOW, { eventId: 'evt_2', endpointId: 'ep_1', notificationId: 'ntf_2' }), NOW)).toEqual({ id: first.id, created: false })
      expect(await f.deliveries.enqueue(row('v', NOW, { eventId: 'evt_1', endpointId: 'ep_1', notificationId: 'ntf_3' }), NOW)).toEqual({ id: first.id, created: false })
    })
  })

  describe('enqueueMany', () => {
    it('answers as enqueue on each row in turn: repeats of stored rows and of earlier rows of the batch', async () => {
      const stored = await f.deliveries.enqueue(row('s', NOW), NOW)
      expect(f.due.count).toBe(1)
      const out = await f.deliveries.enqueueMany([row('a', NOW), row('s', NOW), row('b', NOW, { nextAttemptAt: NOW + 1000 }), row('a', NOW)], NOW)
      expect(out.map((r) => r.created)).toEqual([true, false, true, false])
      expect(out[1]!.id).toBe(stored.id)
      expect(out[3]!.id).toBe(out[0]!.id)
      expect(out[0]!.id < out[2]!.id).toBe(true)
      expect(f.due.count).toBeGreaterThan(1)
      expect(await f.deliveries.get(out[2]!.id)).toMatchObject({ status: 'pending', nextAttemptAt: NOW + 1000, createdAt: NOW, updatedAt: NOW, recipient: 'b' })
      expect(await f.deliveries.queueDepth()).toEqual({ pending: 3, in_flight: 0 })
      expect(await f.deliveries.enqueueMany([], NOW)).toEqual([])
    })

    it('does not wake for a batch of rows all due later or all repeats', async () => {
      await f.deliveries.enqueueMany([row('x', NOW, { nextAttemptAt: NOW + 5000 })], NOW)
      await f.deliveries.enqueueMany([row('x', NOW)], NOW)
      expect(f.due.count).toBe(0)
    })

    it('a repeat of an event row returns the stored id; a repeat of the notification key of an event row too', async () => {
      await insertEndpoint({ id: 'ep_1' })
      for (const id of ['evt_1', 'evt_2', 'evt_3']) await insertEvent(id)
      const ev = (e: string, extra: Partial<NewDelivery> = {}): NewDelivery => ({ channel: 'webhook', eventId: e, endpointId: 'ep_1', eventType: 'test.event', maxAttempts: 8, nextAttemptAt: NOW, ...extra })
      const first = await f.deliveries.enqueue(ev('evt_1'), NOW)
      const out = await f.deliveries.enqueueMany(
        [ev('evt_2'), ev('evt_1'), ev('evt_3', { notificationId: 'ntf_9', recipient: 'u' }), ev('evt_3'), ev('evt_2', { notificationId: 'ntf_9', recipient: 'u' })],
        NOW,
      )
      expect(out.map((r) => r.created)).toEqual([true, false, true, false, false])
      expect(out[1]!.id).toBe(first.id)
      expect(out[3]!.id).toBe(out[2]!.id)
      expect(out[4]!.id).toBe(out[0]!.id)
      expect((await f.deliveries.byEvent('evt_3')).map((d) => d.id)).toEqual([out[2]!.id])
    })

    it('on an ordered endpoint a keyed row waits behind a stored or an earlier row of its key, not behind a repeat', async () => {
      await insertEndpoint({ id: 'ep_ord', ordered: true })
      await insertEndpoint({ id: 'ep_free' })
      for (let i = 1; i <= 6; i++) await insertEvent(`evt_${i}`)
      const ev = (e: string, endpointId: string, orderingKey: string): NewDelivery => ({ channel: 'webhook', eventId: e, endpointId, orderingKey, eventType: 'test.event', maxAttempts: 8, nextAttemptAt: NOW })
      const held = await f.deliveries.enqueue(ev('evt_1', 'ep_ord', 'k1'), NOW)
      const out = await f.deliveries.enqueueMany(
        [ev('evt_1', 'ep_ord', 'k2'), ev('evt_2', 'ep_ord', 'k1'), ev('evt_3', 'ep_ord', 'k2'), ev('evt_4', 'ep_ord', 'k3'), ev('evt_5', 'ep_free', 'k3'), ev('evt_6', 'ep_free', 'k3')],
        NOW,
      )
      // evt_1 → ep_ord repeats the stored row: it holds nothing back for k2.
      expect(out.map((r) => r.created)).toEqual([false, true, true, true, true, true])
      expect(out[0]!.id).toBe(held.id)
      const next = async (i: number): Promise<number | undefined> => (await f.deliveries.get(out[i]!.id))?.nextAttemptAt
      expect(await next(1)).toBe(WAITING_IN_ORDER)
      expect(await next(2)).toBe(NOW)
      expect(await next(3)).toBe(NOW)
      expect(await next(4)).toBe(NOW)
      expect(await next(5)).toBe(NOW)
      const second = await f.deliveries.enqueueMany([ev('evt_5', 'ep_ord', 'k2'), ev('evt_6', 'ep_ord', 'k2')], NOW)
      for (const r of second) expect((await f.deliveries.get(r.id))?.nextAttemptAt).toBe(WAITING_IN_ORDER)
      // Claimed in key order: the held k1 row first, then its follower after it succeeds.
      const firstClaim = ids(await claim())
      expect(firstClaim).toContain(held.id)
      expect(firstClaim).not.toContain(out[1]!.id)
    })
  })

  describe('insertDelivered', () => {
    it('writes a finished row no claim takes, unique like enqueue, with one success attempt each', async () => {
      const inbox = { channel: 'inbox' as const, payload: '{"title":"t"}' }
      const a = await f.deliveries.insertDelivered(row('a', NOW, inbox), NOW)
      const b = await f.deliveries.insertDelivered(row('b', NOW, inbox), NOW)
      expect(a.created && b.created).toBe(true)
      expect(await f.deliveries.insertDelivered(row('a', NOW, inbox), NOW)).toEqual({ id: a.id, created: false })
      expect(await f.deliveries.enqueue(row('a', NOW, inbox), NOW)).toEqual({ id: a.id, created: false })
      expect(f.due.count).toBe(0)
      expect(await claim(NOW + 60_000)).toEqual([])
      expect(await f.deliveries.queueDepth()).toEqual({ pending: 0, in_flight: 0 })
      expect(await f.deliveries.get(a.id)).toMatchObject({
        channel: 'inbox', status: 'success', attempts: 1, maxAttempts: 8, claimToken: null, leaseUntil: null,
        lastStatusCode: null, lastError: null, completedAt: NOW, updatedAt: NOW, payload: '{"title":"t"}',
      })
      await f.deliveries.logDelivered([a.id, b.id], { startedAt: NOW, durationMs: 2.6 })
      await f.deliveries.logDelivered([], { startedAt: NOW, durationMs: 0 })
      for (const id of [a.id, b.id]) {
        const [at] = await f.deliveries.attempts(id)
        expect(at).toEqual({ id: expect.any(Number), deliveryId: id, attempt: 1, startedAt: NOW, durationMs: 3, outcome: 'success', statusCode: null, error: null, responseBody: null })
      }
      expect(await f.deliveries.redeliver(a.id, NOW + 1)).toBe('ok')
      expect(ids(await claim(NOW + 1))).toEqual([a.id])
    })
  })

  describe('insertDeliveredMany', () => {
    it('answers as insertDelivered on each row in turn: repeats of stored rows and of earlier rows of the batch', async () => {
      const inbox = { channel: 'inbox' as const, payload: '{"title":"t"}' }
      const stored = await f.deliveries.insertDelivered(row('a', NOW, inbox), NOW)
      const got = await f.deliveries.insertDeliveredMany([row('b', NOW, inbox), row('a', NOW, inbox), row('c', NOW, inbox), row('b', NOW, inbox)], NOW)
      expect(got.map((g) => g.created)).toEqual([true, false, true, false])
      expect(got[1]!.id).toBe(stored.id)
      expect(got[3]!.id).toBe(got[0]!.id)
      expect(await f.deliveries.insertDeliveredMany([], NOW)).toEqual([])
      expect(f.due.count).toBe(0)
      expect(await claim(NOW + 60_000)).toEqual([])
      for (const g of [got[0]!, got[2]!]) {
        expect(await f.deliveries.get(g.id)).toMatchObject({ channel: 'inbox', status: 'success', attempts: 1, completedAt: NOW, payload: '{"title":"t"}' })
      }
    })
  })

  describe('claimDue', () => {
    it('spends the attempt at claim and sets a lease longer than the timeout plus 15 s', async () => {
      await insertEndpoint({ id: 'ep_slow', timeoutMs: 60_000 })
      const a = await enqueue('a')
      const b = await enqueue('b', { endpointId: 'ep_slow' })
      const rows = await claim(NOW, { leaseMarginMs: 1 })
      expect(ids(rows)).toEqual([a, b])
      expect(rows.map((r) => [r.status, r.attempts])).toEqual([['in_flight', 1], ['in_flight', 1]])
      expect(rows[0]!.leaseUntil).toBe(NOW + 15_000 + 15_000)
      expect(rows[1]!.leaseUntil).toBe(NOW + 60_000 + 15_000)
      // One fresh token per claim (docs/delivery.md, "The queue"); the next claim writes another.
      expect(rows[0]!.claimToken).toBe(rows[1]!.claimToken)
      expect(rows[0]!.claimToken).toMatch(/^[0-9a-f]{24}$/)
      for (const { eventBody, ...r } of rows) {
        expect(eventBody).toBeNull()
        expect(r).toEqual(await f.deliveries.get(r.id))
      }
      expect(await claim()).toEqual([])
    })

    it("reads the event's body with the claim, and writes the owner before the token", async () => {
      await insertEvent('evt_1', '{"hello":1}')
      const a = await enqueue('a', { eventId: 'evt_1' })
      const rows = await claim(NOW, { owner: 'node-a.' })
      expect(rows).toMatchObject([{ id: a, eventId: 'evt_1', eventBody: '{"hello":1}' }])
      expect(rows[0]!.claimToken).toMatch(/^node-a\.[0-9a-f]{24}$/)
    })

    it('re-offers a row whose lease expired, keeping the spent attempt; the stale token then misses', async () => {
      const id = await enqueue('a')
      const [first] = await claim()
      expect(await claim(first!.leaseUntil - 1)).toEqual([])
      const [second] = await claim(first!.leaseUntil)
      expect(second).toMatchObject({ id, attempts: 2 })
      expect(second!.claimToken).not.toBe(first!.claimToken)
      const before = await f.deliveries.get(id)
      const stale = await f.deliveries.settle([{ id, claimToken: first!.claimToken, outcome: { kind: 'success' }, attempt: { startedAt: NOW, durationMs: 1 } }], NOW)
      expect(stale).toEqual([{ result: 'missed' }])
      expect(await f.deliveries.get(id)).toEqual(before)
      expect(await f.deliveries.attempts(id)).toEqual([])
      expect(await f.deliveries.settle([{ id, claimToken: second!.claimToken, outcome: { kind: 'success' } }], NOW)).toEqual([{ result: 'settled', status: 'success', attempts: 2 }])
    })

    it('moves exhausted rows to dead instead of claiming them; an expired lease on the last attempt is dead', async () => {
      const none = await enqueue('zero', { maxAttempts: 0 })
      const used = await enqueue('used')
      await f.exec('UPDATE deliveries SET attempts = max_attempts WHERE id = ?', [used])
      const fine = await enqueue('fine', { maxAttempts: 1 })
      const [c] = await claim()
      expect(c!.id).toBe(fine)
      for (const id of [none, used]) expect(await f.deliveries.get(id)).toMatchObject({ status: 'dead', lastError: 'attempts_exhausted', completedAt: NOW })
      expect(await claim(c!.leaseUntil)).toEqual([])
      expect(await f.deliveries.get(fine)).toMatchObject({ status: 'dead', lastError: 'lease_expired', attempts: 1, completedAt: c!.leaseUntil })
    })

    it('skips paused endpoints until they recover, and finishes rows of disabled and deleted ones instead of claiming them', async () => {
      await insertEndpoint({ id: 'ep_paused', pausedUntil: NOW + 5_000 })
      await insertEndpoint({ id: 'ep_disabled', disabled: true })
      await insertEndpoint({ id: 'ep_deleted', deletedAt: NOW })
      await insertEndpoint({ id: 'ep_ok' })
      const p = await enqueue('p', { endpointId: 'ep_paused' })
      const d = await enqueue('d', { endpointId: 'ep_disabled' })
      const x = await enqueue('x', { endpointId: 'ep_deleted' })
      const ok = await enqueue('ok', { endpointId: 'ep_ok' })
      expect(ids(await claim())).toEqual([ok])
      expect(await f.deliveries.get(p)).toMatchObject({ status: 'pending', attempts: 0 })
      expect(await f.deliveries.get(d)).toMatchObject({ status: 'dead', attempts: 0, lastError: 'endpoint_disabled', completedAt: NOW })
      expect(await f.deliveries.get(x)).toMatchObject({ status: 'cancelled', attempts: 0, lastError: 'endpoint_deleted', completedAt: NOW })
      expect(ids(await claim(NOW + 5_000))).toEqual([p])
    })

    it('limits rows per endpoint with the capacity callback and still reaches other endpoints', async () => {
      await insertEndpoint({ id: 'ep_busy' })
      await insertEndpoint({ id: 'ep_free' })
      for (let i = 0; i < 300; i++) await enqueue(`busy${i}`, { endpointId: 'ep_busy' })
      const free: string[] = []
      for (let i = 0; i < 4; i++) free.push(await enqueue(`free${i}`, { endpointId: 'ep_free' }))
      const cap: Record<string, number> = { ep_busy: 2, ep_free: 100 }
      const rows = await claim(NOW, { limit: 10, capacity: (ep) => cap[ep]! })
      expect(rows.filter((r) => r.endpointId === 'ep_busy')).toHaveLength(2)
      expect(ids(rows.filter((r) => r.endpointId === 'ep_free'))).toEqual(free)
      expect(await claim(NOW, { excludeEndpoints: ['ep_busy'] })).toEqual([])
    })

    it('keys rows without an endpoint by #<channel> for capacity', async () => {
      const mail = await enqueue('m', { channel: 'email' })
      const inbox = await enqueue('i', { channel: 'inbox' })
      const seen = new Set<string>()
      const rows = await claim(NOW, { capacity: (k) => (seen.add(k), k === '#email' ? 0 : 5) })
      expect(ids(rows)).toEqual([inbox])
      expect([...seen].sort()).toEqual(['#email', '#inbox'])
      expect(ids(await claim(NOW))).toEqual([mail])
    })

    it('honours the ordering barrier per (endpoint, key) on ordered endpoints only', async () => {
      await insertEndpoint({ id: 'ep_ord', ordered: true })
      await insertEndpoint({ id: 'ep_any' })
      const k1a = await enqueue('k1a', { endpointId: 'ep_ord', orderingKey: 'k1' })
      const k1b = await enqueue('k1b', { endpointId: 'ep_ord', orderingKey: 'k1' })
      const k2a = await enqueue('k2a', { endpointId: 'ep_ord', orderingKey: 'k2' })
      const k2b = await enqueue('k2b', { endpointId: 'ep_ord', orderingKey: 'k2' })
      const k2c = await enqueue('k2c', { endpointId: 'ep_ord', orderingKey: 'k2' })
      const free = await enqueue('free', { endpointId: 'ep_ord' })
      const u1 = await enqueue('u1', { endpointId: 'ep_any', orderingKey: 'k2' })
      const u2 = await enqueue('u2', { endpointId: 'ep_any', orderingKey: 'k2' })
      expect((await f.deliveries.get(k1b))!.nextAttemptAt).toBe(8_640_000_000_000_000)
      const first = await claim()
      expect(ids(first)).toEqual([k1a, k2a, free, u1, u2])
      const k2aToken = first.find((r) => r.id === k2a)!.claimToken
      await f.deliveries.settle([{ id: k2a, claimToken: k2aToken, outcome: { kind: 'retry', at: NOW + 60_000 } }], NOW)
      await succeed(first.filter((r) => r.id !== k2a))
      const other = await enqueue('u3', { endpointId: 'ep_any', orderingKey: 'k2' })
      const second = await claim(NOW + 1)
      expect(ids(second)).toEqual([k1b, other])
      await succeed(second)
      const [retried] = await claim(NOW + 60_000)
      expect(retried!.id).toBe(k2a)
      await f.deliveries.settle([{ id: k2a, claimToken: retried!.claimToken, outcome: { kind: 'dead' } }], NOW + 60_000)
      expect(ids(await claim(NOW + 60_000))).toEqual([k2b])
      expect((await f.deliveries.get(k2c))!.status).toBe('pending')
      expect(await f.deliveries.redeliver(k2a, NOW + 60_000)).toBe('ok')
      expect(await claim(NOW + 60_000)).toEqual([])
    })

    it('an endpoint made unordered releases its waiting rows; made ordered again, sets the newer ones aside', async () => {
      await insertEndpoint({ id: 'ep_ord', ordered: true })
      const a = await enqueue('a', { endpointId: 'ep_ord', orderingKey: 'k' })
      const b = await enqueue('b', { endpointId: 'ep_ord', orderingKey: 'k' })
      expect((await f.deliveries.get(b))!.nextAttemptAt).toBe(8_640_000_000_000_000)
      await f.exec('UPDATE endpoints SET ordered = 0, updated_at = ? WHERE id = ?', [NOW + 5, 'ep_ord'])
      expect((await f.deliveries.get(b))!.nextAttemptAt).toBe(NOW + 5)
      await f.exec('UPDATE endpoints SET ordered = 1, updated_at = ? WHERE id = ?', [NOW + 6, 'ep_ord'])
      expect((await f.deliveries.get(b))!.nextAttemptAt).toBe(8_640_000_000_000_000)
      expect((await f.deliveries.get(a))!.nextAttemptAt).toBe(NOW)
      // A waiting row left behind (as if the trigger had missed it) is repaired.
      await f.exec(`UPDATE deliveries SET status = 'cancelled' WHERE id = ?`, [a])
      await f.exec(`UPDATE deliveries SET next_attempt_at = 8640000000000000 WHERE id = ?`, [b])
      expect(await f.deliveries.releaseWaitingInOrder(NOW + 7)).toBe(1)
      expect((await f.deliveries.get(b))!.nextAttemptAt).toBe(NOW + 7)
      expect(await f.deliveries.releaseWaitingInOrder(NOW + 8)).toBe(0)
    })

  })

  describe('settle', () => {
    it('snooze and release give the attempt back; release is due at once', async () => {
      const a = await enqueue('a')
      const b = await enqueue('b')
      const [ca, cb] = await claim()
      const wakes = f.due.count
      const res = await f.deliveries.settle(
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
      expect(f.due.count).toBe(wakes + 1)
      expect(await f.deliveries.get(a)).toMatchObject({ nextAttemptAt: NOW + 30_000, claimToken: null, leaseUntil: null })
      expect(await f.deliveries.attempts(a)).toMatchObject([{ attempt: 1, outcome: 'snooze', error: 'circuit_open' }])
      expect(await f.deliveries.attempts(b)).toEqual([])
      expect(ids(await claim())).toEqual([b])
    })

    it('retry schedules the row; a retry on the last attempt makes it dead', async () => {
      const id = await enqueue('a', { maxAttempts: 2 })
      let [c] = await claim()
      expect(await f.deliveries.settle([{ id, claimToken: c!.claimToken, outcome: { kind: 'retry', at: NOW + 1_000 }, attempt: { startedAt: NOW, durationMs: 3, statusCode: 503, error: 'http_503' } }], NOW)).toEqual([
        { result: 'settled', status: 'pending', attempts: 1 },
      ])
      expect(await claim(NOW + 999)).toEqual([])
      ;[c] = await claim(NOW + 1_000)
      expect(await f.deliveries.settle([{ id, claimToken: c!.claimToken, outcome: { kind: 'retry', at: NOW + 9_000 }, attempt: { startedAt: NOW + 1_000, durationMs: 3, statusCode: 500, error: 'http_500' } }], NOW + 1_000)).toEqual([
        { result: 'settled', status: 'dead', attempts: 2 },
      ])
      expect(await f.deliveries.get(id)).toMatchObject({ status: 'dead', lastStatusCode: 500, lastError: 'http_500', completedAt: NOW + 1_000 })
      expect((await f.deliveries.attempts(id)).map((a) => [a.attempt, a.outcome, a.statusCode])).toEqual([
        [1, 'retry', 503],
        [2, 'dead', 500],
      ])
    })

    it('settles a mixed batch in input order with bodies capped at 16 KiB; a stale success misses and logs nothing', async () => {
      const [a, b, c, d] = [await enqueue('a'), await enqueue('b'), await enqueue('c'), await enqueue('d')]
      const rows = await claim()
      const token = (id: string) => rows.find((r) => r.id === id)!.claimToken
      const body = 'ünïcødé "quoted" \\ back\nslash 🎉'
      const res = await f.deliveries.settle(
        [
          { id: a, claimToken: token(a), outcome: { kind: 'success' }, attempt: { startedAt: NOW, durationMs: 2, statusCode: 204, responseBody: body } },
          { id: b, claimToken: 'stale', outcome: { kind: 'success' }, attempt: { startedAt: NOW, durationMs: 2, statusCode: 200 } },
          { id: c, claimToken: token(c), outcome: { kind: 'retry', at: NOW + 5 }, attempt: { startedAt: NOW, durationMs: 1, error: 'timeout', responseBody: 'x'.repeat(40_000) } },
          { id: d, claimToken: token(d), outcome: { kind: 'success' } },
        ],
        NOW + 3,
      )
      expect(res).toEqual([
        { result: 'settled', status: 'success', attempts: 1 },
        { result: 'missed' },
        { result: 'settled', status: 'pending', attempts: 1 },
        { result: 'settled', status: 'success', attempts: 1 },
      ])
      expect(await f.deliveries.attempts(a)).toMatchObject([{ attempt: 1, outcome: 'success', statusCode: 204, responseBody: body, error: null, durationMs: 2 }])
      expect((await f.deliveries.attempts(c))[0]!.responseBody).toHaveLength(RESPONSE_BODY_LIMIT)
      expect(await f.deliveries.get(a)).toMatchObject({ status: 'success', lastStatusCode: 204, claimToken: null, leaseUntil: null, completedAt: NOW + 3 })
      expect(await f.deliveries.get(b)).toMatchObject({ status: 'in_flight' })
      expect(await f.deliveries.attempts(b)).toEqual([])
      expect(await f.deliveries.attempts(d)).toEqual([])
      expect(await f.deliveries.get(d)).toMatchObject({ status: 'success', lastStatusCode: null })
    })

    it('settles successes whose claim the caller describes as it settles them without: all matched, or a stale one among them (70 rows, three statements)', async () => {
      const made: string[] = []
      for (let i = 0; i < 70; i++) made.push(await enqueue(`r${i}`))
      const rows = await claim()
      expect(rows).toHaveLength(70)
      // A redeliver-like race: row 5 was claimed again, so the token this batch holds is stale.
      const stale = rows[5]!.id
      const described = (r: ClaimedDelivery) => ({
        id: r.id,
        claimToken: r.id === stale ? 'stale' : r.claimToken,
        outcome: { kind: 'success' as const },
        attempt: { startedAt: NOW + 1, durationMs: 2, statusCode: 200, responseBody: 'ok' },
        claimed: claimedOf(r),
      })
      const res = await f.deliveries.settle(rows.map(described), NOW + 2)
      expect(res).toEqual(rows.map((r) => (r.id === stale ? { result: 'missed' } : { result: 'settled', status: 'success', attempts: 1 })))
      expect(await f.deliveries.get(stale)).toMatchObject({ status: 'in_flight', attempts: 1 })
      expect(await f.deliveries.attempts(stale)).toEqual([])
      const other = rows[6]!.id
      expect(await f.deliveries.get(other)).toMatchObject({ status: 'success', lastStatusCode: 200, claimToken: null, completedAt: NOW + 2 })
      expect(await f.deliveries.attempts(other)).toMatchObject([{ attempt: 1, outcome: 'success', statusCode: 200, responseBody: 'ok', durationMs: 2 }])
      expect(await f.deliveries.queueDepth()).toEqual({ pending: 0, in_flight: 1 })
      // Settled again, nothing matches: every entry misses.
      expect(await f.deliveries.settle(rows.slice(0, 3).map(described), NOW + 3)).toEqual([{ result: 'missed' }, { result: 'missed' }, { result: 'missed' }])
      expect(made.sort()).toEqual(ids(rows).sort())
    })

    it("keeps a plain success's attempt in its row, logs the others as attempts rows, and lists both the same way; a redeliver moves it into attempts", async () => {
      const [a, b, c] = [await enqueue('a'), await enqueue('b'), await enqueue('c')]
      const rows = await claim()
      const token = (id: string) => rows.find((r) => r.id === id)!.claimToken
      const long = 'y'.repeat(ROW_ATTEMPT_BODY_LIMIT + 1)
      await f.deliveries.settle(
        [
          { id: a, claimToken: token(a), outcome: { kind: 'success' }, attempt: { startedAt: NOW + 1, durationMs: 2.4, statusCode: 200, responseBody: 'ok' } },
          { id: b, claimToken: token(b), outcome: { kind: 'success' }, attempt: { startedAt: NOW + 1, durationMs: 3, statusCode: 200, responseBody: long } },
          { id: c, claimToken: token(c), outcome: { kind: 'retry', at: NOW + 5 }, attempt: { startedAt: NOW + 1, durationMs: 4, statusCode: 503, responseBody: 'busy' } },
        ],
        NOW + 10,
      )
      const logged = async (id: string) => (await f.all<{ n: number }>(`SELECT count(*) AS n FROM attempts WHERE delivery_id = ?`, [id]))[0]!.n
      // a: no attempts row; b (a long body) and c (not a success): one each.
      expect([Number(await logged(a)), Number(await logged(b)), Number(await logged(c))]).toEqual([0, 1, 1])
      expect(await f.deliveries.attempts(a)).toMatchObject([
        { deliveryId: a, attempt: 1, startedAt: NOW + 1, durationMs: 2, outcome: 'success', statusCode: 200, error: null, responseBody: 'ok' },
      ])
      expect(await f.deliveries.attempts(b)).toMatchObject([{ attempt: 1, outcome: 'success', statusCode: 200, responseBody: long }])
      // c fails once, then succeeds: the logged failure first, the row's success after it.
      const [again] = await claim(NOW + 5)
      await f.deliveries.settle([{ id: c, claimToken: again!.claimToken, outcome: { kind: 'success' }, attempt: { startedAt: NOW + 6, durationMs: 1, statusCode: 204, responseBody: '' } }], NOW + 7)
      expect((await f.deliveries.attempts(c)).map((t) => [t.attempt, t.outcome, t.statusCode, t.responseBody])).toEqual([
        [1, 'retry', 503, 'busy'],
        [2, 'success', 204, ''],
      ])
      // A redeliver keeps the history: the row's success becomes an attempts row, and the next
      // success is kept in the row again, listed after it.
      expect(await f.deliveries.redeliver(a, NOW + 20)).toBe('ok')
      expect(Number(await logged(a))).toBe(1)
      expect(await f.deliveries.attempts(a)).toMatchObject([{ attempt: 1, startedAt: NOW + 1, durationMs: 2, outcome: 'success', statusCode: 200, responseBody: 'ok' }])
      const [redo] = await claim(NOW + 20)
      await f.deliveries.settle([{ id: a, claimToken: redo!.claimToken, outcome: { kind: 'success' }, attempt: { startedAt: NOW + 21, durationMs: 5, statusCode: 202, responseBody: 'again' } }], NOW + 22)
      expect((await f.deliveries.attempts(a)).map((t) => [t.attempt, t.startedAt, t.statusCode, t.responseBody])).toEqual([
        [1, NOW + 1, 200, 'ok'],
        [1, NOW + 21, 202, 'again'],
      ])
      expect(Number(await logged(a))).toBe(1)
      // A redeliver that is refused moves nothing.
      await f.exec(`UPDATE deliveries SET status = 'success' WHERE id = ?`, [a])
      await insertEndpoint({ id: 'ep_off', disabled: true })
      await f.exec(`UPDATE deliveries SET endpoint_id = 'ep_off' WHERE id = ?`, [a])
      expect(await f.deliveries.redeliver(a, NOW + 30)).toBe('endpoint_unavailable')
      expect(Number(await logged(a))).toBe(1)
      expect(await f.deliveries.attempts(a)).toHaveLength(2)
    })

    it('a retry or release on an endpoint disabled or deleted meanwhile ends the row instead of leaving it pending', async () => {
      for (const id of ['ep_a', 'ep_b', 'ep_c']) await insertEndpoint({ id })
      const a = await enqueue('a', { endpointId: 'ep_a' })
      const b = await enqueue('b', { endpointId: 'ep_b' })
      const c = await enqueue('c', { endpointId: 'ep_c' })
      const rows = await claim()
      await f.exec(`UPDATE endpoints SET disabled = 1 WHERE id = 'ep_a'`)
      await f.exec(`UPDATE endpoints SET deleted_at = ? WHERE id = 'ep_b'`, [NOW])
      const attempt = { startedAt: NOW, durationMs: 5, statusCode: 500, error: 'http_500' }
      const out = await f.deliveries.settle(
        rows.map((r) => ({ id: r.id, claimToken: r.claimToken, outcome: r.id === c ? { kind: 'release' as const } : { kind: 'retry' as const, at: NOW + 1000 }, attempt })),
        NOW,
      )
      expect(out.map((o) => (o.result === 'settled' ? o.status : o.result))).toEqual(['dead', 'cancelled', 'pending'])
      expect(await f.deliveries.get(a)).toMatchObject({ status: 'dead', lastError: 'endpoint_disabled', completedAt: NOW })
      expect(await f.deliveries.get(b)).toMatchObject({ status: 'cancelled', lastError: 'endpoint_deleted', completedAt: NOW })
      expect(await f.deliveries.get(c)).toMatchObject({ status: 'pending', completedAt: null })
      expect((await f.deliveries.attempts(a)).map((t) => t.statusCode)).toEqual([500])
    })

    it("a success without a status code clears an earlier failure's", async () => {
      const id = await enqueue('mail', { channel: 'email' })
      const [first] = await claim(NOW)
      await f.deliveries.settle([{ id, claimToken: first!.claimToken, outcome: { kind: 'retry', at: NOW }, attempt: { startedAt: NOW, durationMs: 1, statusCode: 451, error: 'try later' } }], NOW)
      expect(await f.deliveries.get(id)).toMatchObject({ status: 'pending', lastStatusCode: 451 })
      const [second] = await claim(NOW)
      await f.deliveries.settle([{ id, claimToken: second!.claimToken, outcome: { kind: 'success' }, attempt: { startedAt: NOW, durationMs: 1 } }], NOW)
      expect(await f.deliveries.get(id)).toMatchObject({ status: 'success', lastStatusCode: null, lastError: null })
    })
  })

  describe('digest groups', () => {
    it('holdPending moves pending rows out of reach of claims, and leaves claimed rows alone', async () => {
      const [a, b, c] = [await enqueue('a', { groupKey: 'g' }), await enqueue('b', { groupKey: 'g' }), await enqueue('c', { groupKey: 'g' })]
      const [first] = await claim(NOW, { limit: 1 })
      expect(first!.id).toBe(a)
      expect(await f.deliveries.holdPending([a, b, c], NOW + 60_000, NOW)).toBe(2)
      expect(await claim(NOW + 40_000)).toEqual([])
      expect(await f.deliveries.pendingInGroup('g', NOW + 59_999)).toEqual([])
      expect((await f.deliveries.pendingInGroup('g', NOW + 60_000)).map((d) => [d.id, d.nextAttemptAt])).toEqual([
        [b, NOW + 60_000],
        [c, NOW + 60_000],
      ])
      await succeed([first!])
      expect(ids(await claim(NOW + 60_000))).toEqual([b, c])
    })

    const T0 = Date.parse('2026-01-16T00:00:00Z')
    const member = async (n: number, maxAttempts: number): Promise<string> =>
      (await f.deliveries.enqueue({ channel: 'email', notificationId: `ntf_${n}`, recipient: 'u1', eventType: 't', payload: '{}', groupKey: 'u1|email|1', maxAttempts, nextAttemptAt: T0 }, T0)).id
    const sent = { startedAt: T0 + 5, durationMs: 42, statusCode: null, error: null, responseBody: 'sent in the message of dlv_x: 250 OK' }
    const failed = { startedAt: T0 + 5, durationMs: 42, statusCode: 451, error: '451 try later', responseBody: 'sent in the message of dlv_x' }

    it('carryGroupMember: success and dead end the row, count the attempt and log it', async () => {
      const d = f.deliveries
      const ok = await member(1, 6)
      const dead = await member(2, 6)
      expect(await d.carryGroupMember(ok, { kind: 'success' }, sent, T0 + 50)).toBe('success')
      expect(await d.carryGroupMember(dead, { kind: 'dead' }, { ...failed, statusCode: 550, error: '550 no' }, T0 + 50)).toBe('dead')
      expect(await d.get(ok)).toMatchObject({ status: 'success', attempts: 1, lastError: null, completedAt: T0 + 50 })
      expect(await d.get(dead)).toMatchObject({ status: 'dead', attempts: 1, lastStatusCode: 550, lastError: '550 no', completedAt: T0 + 50 })
      expect(await d.attempts(ok)).toMatchObject([{ attempt: 1, outcome: 'success', startedAt: T0 + 5, durationMs: 42, statusCode: null, error: null, responseBody: sent.responseBody }])
      expect(await d.attempts(dead)).toMatchObject([{ attempt: 1, outcome: 'dead', statusCode: 550, error: '550 no' }])
      expect(await d.carryGroupMember(ok, { kind: 'dead' }, failed, T0 + 60)).toBeNull()
      expect(await d.attempts(ok)).toHaveLength(1)
    })

    it('carryGroupMember: a retry keeps the row pending until the retry time, or ends it dead on its last attempt', async () => {
      const d = f.deliveries
      const more = await member(1, 2)
      const last = await member(2, 1)
      expect(await d.carryGroupMember(more, { kind: 'retry', at: T0 + 1000 }, failed, T0 + 50)).toBe('pending')
      expect(await d.get(more)).toMatchObject({ status: 'pending', attempts: 1, nextAttemptAt: T0 + 1000, lastStatusCode: 451, completedAt: null })
      expect(await d.carryGroupMember(last, { kind: 'retry', at: T0 + 1000 }, failed, T0 + 50)).toBe('dead')
      expect(await d.get(last)).toMatchObject({ status: 'dead', attempts: 1, completedAt: T0 + 50 })
      expect(await d.carryGroupMember(more, { kind: 'retry', at: T0 + 2000 }, failed, T0 + 1000)).toBe('dead')
      expect((await d.attempts(more)).map((a) => [a.attempt, a.outcome])).toEqual([
        [1, 'retry'],
        [2, 'dead'],
      ])
    })
  })

  describe('operator actions', () => {
    it('redeliver: only terminal rows, attempts reset, history kept; never to a disabled or deleted endpoint', async () => {
      const id = await enqueue('a')
      expect(await f.deliveries.redeliver(id, NOW)).toBe('not_eligible')
      expect(await f.deliveries.redeliver('dlv_missing', NOW)).toBe('not_found')
      const [c] = await claim()
      expect(await f.deliveries.redeliver(id, NOW)).toBe('not_eligible')
      await f.deliveries.settle([{ id, claimToken: c!.claimToken, outcome: { kind: 'dead' }, attempt: { startedAt: NOW, durationMs: 1, statusCode: 400 } }], NOW)
      const wakes = f.due.count
      expect(await f.deliveries.redeliver(id, NOW + 5)).toBe('ok')
      expect(f.due.count).toBe(wakes + 1)
      expect(await f.deliveries.get(id)).toMatchObject({ status: 'pending', attempts: 0, nextAttemptAt: NOW + 5, completedAt: null })
      expect(await f.deliveries.attempts(id)).toHaveLength(1)
      expect(ids(await claim(NOW + 5))).toEqual([id])

      await insertEndpoint({ id: 'ep_a' })
      const e = await enqueue('e', { endpointId: 'ep_a' })
      await f.exec(`UPDATE deliveries SET status = 'dead', completed_at = ? WHERE id = ?`, [NOW, e])
      await f.exec(`UPDATE endpoints SET disabled = 1 WHERE id = 'ep_a'`)
      expect(await f.deliveries.redeliver(e, NOW)).toBe('endpoint_unavailable')
      await f.exec(`UPDATE endpoints SET disabled = 0, deleted_at = ? WHERE id = 'ep_a'`, [NOW])
      expect(await f.deliveries.redeliver(e, NOW)).toBe('endpoint_unavailable')
      await f.exec(`UPDATE endpoints SET deleted_at = NULL WHERE id = 'ep_a'`)
      expect(await f.deliveries.redeliver(e, NOW)).toBe('ok')
    })

    it('recover brings back dead rows of one endpoint created in [since, until)', async () => {
      await insertEndpoint({ id: 'ep_a' })
      await insertEndpoint({ id: 'ep_b' })
      const made: string[] = []
      for (let i = 0; i < 4; i++) made.push(await enqueue(`a${i}`, { endpointId: 'ep_a' }, NOW + i * 1000))
      const otherEp = await enqueue('b0', { endpointId: 'ep_b' }, NOW + 1000)
      await f.exec(`UPDATE deliveries SET status = 'dead', attempts = 8, completed_at = ?`, [NOW])
      expect(await f.deliveries.recover('ep_a', NOW + 1000, NOW + 3000, NOW + 10_000)).toBe(2)
      const statuses: string[] = []
      for (const id of made) statuses.push((await f.deliveries.get(id))!.status)
      expect(statuses).toEqual(['dead', 'pending', 'pending', 'dead'])
      expect(await f.deliveries.get(made[1]!)).toMatchObject({ attempts: 0, nextAttemptAt: NOW + 10_000 })
      expect((await f.deliveries.get(otherEp))!.status).toBe('dead')
    })

    it('cancel, kill, defer and release the pending rows of one endpoint only', async () => {
      await insertEndpoint({ id: 'ep_a' })
      await insertEndpoint({ id: 'ep_b' })
      const inFlight = await enqueue('a0', { endpointId: 'ep_a' })
      await claim()
      const pending = [await enqueue('a1', { endpointId: 'ep_a', nextAttemptAt: NOW + 1000 }), await enqueue('a2', { endpointId: 'ep_a', nextAttemptAt: NOW + 1000 })]
      const b = await enqueue('b0', { endpointId: 'ep_b' })
      expect(await f.deliveries.deferPendingForEndpoint('ep_b', NOW + 30_000, NOW)).toBe(1)
      expect(await f.deliveries.get(b)).toMatchObject({ nextAttemptAt: NOW + 30_000 })
      expect(await f.deliveries.releaseHeldForEndpoint('ep_b', NOW + 30_000, NOW + 10)).toBe(1)
      expect(await f.deliveries.get(b)).toMatchObject({ nextAttemptAt: NOW + 10 })
      expect(await f.deliveries.releaseHeldForEndpoint('ep_b', NOW, NOW + 10)).toBe(0)
      expect(await f.deliveries.cancelForEndpoint('ep_a', NOW)).toBe(2)
      for (const id of pending) expect(await f.deliveries.get(id)).toMatchObject({ status: 'cancelled', lastError: 'endpoint_deleted', completedAt: NOW })
      expect((await f.deliveries.get(inFlight))!.status).toBe('in_flight')
      expect(await f.deliveries.killPendingForEndpoint('ep_b', 'endpoint_disabled', NOW)).toBe(1)
      expect(await f.deliveries.get(b)).toMatchObject({ status: 'dead', lastError: 'endpoint_disabled' })
    })
  })

  describe('reads', () => {
    it('lists newest first with cursors and filters', async () => {
      await insertEndpoint({ id: 'ep_a' })
      const made: string[] = []
      for (let i = 0; i < 25; i++) made.push(await enqueue(`r${i}`, i % 5 === 0 ? { endpointId: 'ep_a' } : {}))
      const newest = [...made].reverse()
      const p1 = await f.deliveries.list({ limit: 10 })
      const p2 = await f.deliveries.list({ limit: 10, cursor: p1.next_cursor })
      const p3 = await f.deliveries.list({ limit: 10, cursor: p2.next_cursor })
      expect([...ids(p1.data), ...ids(p2.data), ...ids(p3.data)]).toEqual(newest)
      expect(p3.next_cursor).toBeNull()
      expect(ids((await f.deliveries.list({ limit: 50, endpointId: 'ep_a' })).data)).toEqual(newest.filter((_, i) => (24 - i) % 5 === 0))
      expect((await f.deliveries.list({ limit: 50, status: 'success' })).data).toEqual([])
      expect(ids((await f.deliveries.list({ limit: 3, cursor: 'not a cursor!' })).data)).toEqual(newest.slice(0, 3))
      expect((await f.deliveries.list({ status: 'pending', endpointId: '#webhook', limit: 10 })).data).toEqual([])
    })

    it('lists each status newest first, with channel and application filters', async () => {
      await insertEndpoint({ id: 'ep_a' })
      const made: string[] = []
      for (let i = 0; i < 12; i++) {
        made.push(await enqueue(`r${i}`, { endpointId: i % 2 ? 'ep_a' : null, eventType: i % 3 ? 'a' : 'b', channel: i === 11 ? 'email' : 'webhook', appId: i === 10 ? 'app_x' : undefined }))
      }
      for (const i of [0, 5]) await f.exec('UPDATE deliveries SET status = ?, completed_at = ? WHERE id = ?', ['dead', NOW, made[i]])
      await f.exec('UPDATE deliveries SET status = ?, completed_at = ? WHERE id = ?', ['cancelled', NOW, made[3]])
      for (const i of [1, 7]) await f.exec('UPDATE deliveries SET status = ?, completed_at = ? WHERE id = ?', ['success', NOW, made[i]])
      const pending = made.filter((_, i) => ![0, 1, 3, 5, 7].includes(i)).reverse()
      const all = async (flt: Record<string, unknown>): Promise<string[]> => {
        const out: string[] = []
        for (let cursor: string | null = null; ; ) {
          const page = await f.deliveries.list({ ...flt, limit: 2, cursor })
          out.push(...ids(page.data))
          if (!(cursor = page.next_cursor)) return out
        }
      }
      expect(await all({ status: 'pending' })).toEqual(pending)
      expect(await all({ status: 'pending', endpointId: 'ep_a' })).toEqual(pending.filter((id) => made.indexOf(id) % 2 === 1))
      expect(await all({ status: 'pending', eventType: 'b' })).toEqual(pending.filter((id) => made.indexOf(id) % 3 === 0))
      expect(await all({ status: 'dead' })).toEqual([made[5], made[0]])
      expect(await all({ status: 'cancelled' })).toEqual([made[3]])
      expect(await all({ status: 'success', endpointId: 'ep_a' })).toEqual([made[7], made[1]])
      expect(await all({ channel: 'email' })).toEqual([made[11]])
      expect(await all({ appId: 'app_x' })).toEqual([made[10]])
      expect(await all({ appId: 'default', eventType: 'b', status: 'dead' })).toEqual([made[0]])
    })

    it('counts by status, by endpoint and by notification, the queue depth and the oldest pending time', async () => {
      expect(await f.deliveries.oldestPendingAt()).toBeNull()
      await enqueue('a', { nextAttemptAt: NOW + 500 })
      await enqueue('b')
      await enqueue('c')
      await claim(NOW, { limit: 1 })
      expect(await f.deliveries.countByStatus()).toEqual({ pending: 2, in_flight: 1, success: 0, dead: 0, cancelled: 0 })
      expect(await f.deliveries.queueDepth()).toEqual({ pending: 2, in_flight: 1 })
      expect(await f.deliveries.countsByNotification('ntf_test')).toEqual({ pending: 2, in_flight: 1, success: 0, dead: 0, cancelled: 0 })
      expect(await f.deliveries.oldestPendingAt()).toBe(NOW)
      expect((await f.deliveries.byNotification('ntf_test')).map((d) => d.recipient)).toEqual(['a', 'b', 'c'])
      expect((await f.deliveries.byNotification('ntf_test', 2)).map((d) => d.recipient)).toEqual(['a', 'b'])
      await insertEndpoint({ id: 'ep_a' })
      await insertEndpoint({ id: 'ep_b' })
      await insertEvent('evt_1')
      await enqueue('ea1', { endpointId: 'ep_a', eventId: 'evt_1' })
      await enqueue('ea2', { endpointId: 'ep_a', nextAttemptAt: NOW + 9_000 })
      await enqueue('eb1', { endpointId: 'ep_b', eventId: 'evt_1' })
      await claim(NOW, { excludeEndpoints: ['ep_a'] })
      expect(await f.deliveries.pendingByEndpoint()).toEqual({ ep_a: 2 })
      expect((await f.deliveries.byEvent('evt_1')).map((d) => d.recipient)).toEqual(['ea1', 'eb1'])
    })
  })
})
