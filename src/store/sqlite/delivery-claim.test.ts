import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { CLAIM_ROWS, CLAIM_SQL } from './delivery-claim-sql.js'
import { QUIET_MS } from './delivery-claim.js'
import { PASS_ENDPOINTS, WAITING_IN_ORDER, type ClaimedDelivery, type ClaimOptions } from '../deliveries.js'
import { insertEndpoint, openTestQueue, row, type TestQueue } from '../../../test/queue-helpers.js'

const NOW = Date.UTC(2026, 0, 1)
/** More rows than one claim reads from the head of the queue (4 × limit, min 256). */
const BACKLOG = 300

let q: TestQueue
beforeEach(() => {
  q = openTestQueue()
})
afterEach(() => q.cleanup())

const enqueue = (key: string, extra: Parameters<typeof row>[2] = {}): string => q.deliveries.enqueue(row(key, NOW, extra), NOW).id
const claim = (extra: Partial<ClaimOptions> = {}): ClaimedDelivery[] => q.deliveries.claimDue({ limit: 100, now: NOW, defaultTimeoutMs: 15_000, ...extra })
const endpointsOf = (rows: ClaimedDelivery[]): (string | null)[] => rows.map((r) => r.endpointId)

/** A saturated endpoint whose due rows fill the head of the queue, older than everything else. */
function saturatedBacklog(): void {
  insertEndpoint(q.db, { id: 'ep_busy' })
  for (let i = 0; i < BACKLOG; i++) enqueue(`busy${i}`, { endpointId: 'ep_busy', nextAttemptAt: NOW - 60_000 })
}

describe('claim behind a saturated endpoint (docs/delivery.md isolation)', () => {
  it('takes the other endpoints and the rows without one in turn, one claim after another', () => {
    saturatedBacklog()
    insertEndpoint(q.db, { id: 'ep_b' })
    insertEndpoint(q.db, { id: 'ep_c' })
    for (let i = 0; i < 5; i++) enqueue(`b${i}`, { endpointId: 'ep_b' })
    for (let i = 0; i < 5; i++) enqueue(`c${i}`, { endpointId: 'ep_c' })
    for (let i = 0; i < 3; i++) enqueue(`n${i}`, { channel: 'inbox' })
    const opts = { limit: 4, excludeEndpoints: ['ep_busy'] }
    // The turns go by key: `#inbox` (rows without an endpoint, by channel) sorts before the endpoints.
    expect(endpointsOf(claim(opts)).sort()).toEqual(['ep_b', null, null, null].sort())
    expect(endpointsOf(claim(opts))).toEqual(['ep_c', 'ep_c', 'ep_c', 'ep_c'])
    expect(endpointsOf(claim(opts))).toEqual(['ep_b', 'ep_b', 'ep_b', 'ep_b'])
    expect(endpointsOf(claim(opts))).toEqual(['ep_c'])
    expect(claim(opts)).toEqual([])
    expect(q.deliveries.countByStatus()).toMatchObject({ pending: BACKLOG, in_flight: 13 })
  })

  it('keeps capacity, pauses, the ordering barrier, exhausted rows and gone endpoints on that path', () => {
    saturatedBacklog()
    insertEndpoint(q.db, { id: 'ep_cap' })
    insertEndpoint(q.db, { id: 'ep_paused', pausedUntil: NOW + 5_000 })
    insertEndpoint(q.db, { id: 'ep_ord', ordered: true })
    insertEndpoint(q.db, { id: 'ep_gone', deletedAt: NOW })
    for (let i = 0; i < 5; i++) enqueue(`cap${i}`, { endpointId: 'ep_cap' })
    const paused = enqueue('paused', { endpointId: 'ep_paused' })
    const [first, second] = [enqueue('ord0', { endpointId: 'ep_ord', orderingKey: 'k' }), enqueue('ord1', { endpointId: 'ep_ord', orderingKey: 'k' })]
    const gone = enqueue('gone', { endpointId: 'ep_gone' })
    const spent = enqueue('spent', { endpointId: 'ep_ord', maxAttempts: 1 })
    q.db.prepare('UPDATE deliveries SET attempts = 1 WHERE id = ?').run(spent)
    const cap: Record<string, number> = { ep_busy: 0, ep_cap: 2 }

    const rows = claim({ limit: 10, capacity: (id) => cap[id ?? ""] ?? 100 })
    expect(endpointsOf(rows).filter((e) => e === 'ep_cap')).toHaveLength(2)
    expect(rows.filter((r) => r.endpointId === 'ep_ord').map((r) => r.id)).toEqual([first])
    expect(rows).toHaveLength(3)
    expect(q.deliveries.get(second)!.status).toBe('pending')
    expect(q.deliveries.get(paused)).toMatchObject({ status: 'pending', attempts: 0 })
    expect(q.deliveries.get(gone)).toMatchObject({ status: 'cancelled', lastError: 'endpoint_deleted' })
    expect(q.deliveries.get(spent)).toMatchObject({ status: 'dead', lastError: 'attempts_exhausted' })
  })
})

describe('rows without an endpoint', () => {
  it('take slots per channel (#email, #inbox), so an email backlog holds back neither inbox rows nor endpoints', () => {
    insertEndpoint(q.db, { id: 'ep_quiet' })
    for (let i = 0; i < 50; i++) enqueue(`mail${i}`, { channel: 'email', nextAttemptAt: NOW - 1000 })
    const inbox = enqueue('in', { channel: 'inbox' })
    const quiet = enqueue('q', { endpointId: 'ep_quiet' })
    const asked = new Set<string>()
    const rows = claim({ limit: 32, capacity: (key) => (asked.add(key), key === '#email' ? 4 : 16) })
    expect(rows.filter((r) => r.channel === 'email')).toHaveLength(4)
    expect(rows.filter((r) => r.channel !== 'email').map((r) => r.id).sort()).toEqual([inbox, quiet].sort())
    expect([...asked].sort()).toEqual(['#email', '#inbox', 'ep_quiet'])
    expect(claim({ limit: 32 }).filter((r) => r.channel === 'email')).toHaveLength(32)
  })
})

describe('a second path with many endpoints holding scheduled rows', () => {
  const count = PASS_ENDPOINTS * 2 + 10
  const ep = (i: number): string => `ep_${String(i).padStart(4, '0')}`
  const opts = { limit: 4, excludeEndpoints: ['ep_busy'] }
  beforeEach(() => {
    saturatedBacklog()
    q.db.transaction(() => {
      for (let i = 0; i < count; i++) {
        insertEndpoint(q.db, { id: ep(i) })
        enqueue(`later${i}`, { endpointId: ep(i), nextAttemptAt: NOW + 3_600_000 })
      }
    })()
  })

  it(`looks at ${PASS_ENDPOINTS} endpoints per claim and goes on from there in the next, without waiting QUIET_MS`, () => {
    // Due, on the endpoint that sorts last: PASS_ENDPOINTS * 2 + 9 endpoints come before it.
    const last = enqueue('due', { endpointId: ep(count - 1) })
    expect(claim(opts)).toEqual([])
    expect(claim(opts)).toEqual([])
    expect(claim(opts).map((r) => r.id)).toEqual([last])
    // Every endpoint has had its turn: the ring then goes quiet as with few endpoints.
    for (let i = 0; i < 3; i++) expect(claim(opts)).toEqual([])
    q.db.prepare(`UPDATE deliveries SET next_attempt_at = ? WHERE id = (SELECT id FROM deliveries WHERE endpoint_id = 'ep_0000')`).run(NOW)
    expect(claim(opts)).toEqual([])
    expect(claim({ ...opts, now: NOW + QUIET_MS }).map((r) => r.endpointId)).toEqual(['ep_0000'])
  })

  it('starts the round again when a row becomes due behind a run of passes that found nothing', () => {
    expect(claim(opts)).toEqual([])
    // Made due here, on an endpoint the run has passed: the run cannot go quiet without it.
    const behind = enqueue('behind', { endpointId: ep(100) })
    const found = [claim(opts), claim(opts), claim(opts), claim(opts)].flat()
    expect(found.map((r) => r.id)).toEqual([behind])
  })
})

describe('a second path that found nothing waits a little before looking again (QUIET_MS)', () => {
  const busy = { limit: 4, capacity: (id: string | null) => (id === 'ep_busy' ? 0 : id === 'ep_full' ? full : 16) }
  let full = 0

  it('looks again at once for a row made due here, or an endpoint with a free slot again; otherwise after QUIET_MS', () => {
    saturatedBacklog()
    insertEndpoint(q.db, { id: 'ep_b' })
    insertEndpoint(q.db, { id: 'ep_full' })
    enqueue('f0', { endpointId: 'ep_full' })
    full = 0
    expect(claim(busy)).toEqual([])
    // Enqueued here: counted, so the next claim looks again at once.
    const b = enqueue('b0', { endpointId: 'ep_b' })
    expect(claim(busy).map((r) => r.id)).toEqual([b])
    expect(claim(busy)).toEqual([])
    // A full endpoint behind the head has a free slot again.
    full = 1
    expect(claim(busy).map((r) => r.endpointId)).toEqual(['ep_full'])
    full = 0
    // A row written by another connection is found once QUIET_MS has passed, not before.
    expect(claim(busy)).toEqual([])
    q.db.prepare(`INSERT INTO deliveries (id, channel, endpoint_id, notification_id, recipient, event_type, status, attempts,
      max_attempts, next_attempt_at, created_at, updated_at) VALUES ('dlv_foreign', 'webhook', 'ep_b', 'ntf_x', 'x', 't', 'pending', 0, 8, ?, ?, ?)`).run(NOW, NOW, NOW)
    expect(claim({ ...busy, now: NOW + QUIET_MS - 1 })).toEqual([])
    expect(claim({ ...busy, now: NOW + QUIET_MS }).map((r) => r.id)).toEqual(['dlv_foreign'])
  })

  it('a row made due on the endpoint that stopped the first path counts once another endpoint stops it', () => {
    insertEndpoint(q.db, { id: 'ep_a' })
    insertEndpoint(q.db, { id: 'ep_b' })
    const old = enqueue('a_old', { endpointId: 'ep_a', nextAttemptAt: NOW - 60_000 })
    enqueue('b', { endpointId: 'ep_b', nextAttemptAt: NOW - 30_000 })
    const cap: Record<string, number> = { ep_a: 0, ep_b: 0 }
    const opts = { limit: 4, capacity: (id: string | null) => (id === null ? 16 : (cap[id] ?? 16)) }
    expect(claim(opts)).toEqual([])
    // Made due while ep_a stops the first path (uncounted), then ep_a frees two slots: ep_b stops it now.
    const fresh = enqueue('a_new', { endpointId: 'ep_a' })
    cap.ep_a = 2
    expect(claim({ ...opts, now: NOW + 1 }).map((r) => r.id)).toEqual([old, fresh])
  })

  it('a row of an ordering key that the claim itself ends (attempts exhausted) lets the next one be claimed at once', () => {
    saturatedBacklog()
    insertEndpoint(q.db, { id: 'ep_ord', ordered: true })
    const first = enqueue('k0', { endpointId: 'ep_ord', orderingKey: 'k', maxAttempts: 1 })
    const second = enqueue('k1', { endpointId: 'ep_ord', orderingKey: 'k' })
    q.db.prepare('UPDATE deliveries SET attempts = 1 WHERE id = ?').run(first)
    expect(claim(busy)).toEqual([])
    expect(q.deliveries.get(first)!.status).toBe('dead')
    expect(claim({ ...busy, now: NOW + 1 }).map((r) => r.id)).toEqual([second])
  })

  it('new rows of the channel that stopped the first path (#email) do not break the quiet', () => {
    for (let i = 0; i < BACKLOG; i++) enqueue(`mail${i}`, { channel: 'email', nextAttemptAt: NOW - 60_000 })
    insertEndpoint(q.db, { id: 'ep_b' })
    const mailFull = { limit: 4, capacity: (key: string) => (key === '#email' ? 0 : 16) }
    expect(claim(mailFull)).toEqual([])
    // Written by another connection (not counted), then more email here (counted under #email).
    q.db.prepare(`INSERT INTO deliveries (id, channel, endpoint_id, notification_id, recipient, event_type, status, attempts,
      max_attempts, next_attempt_at, created_at, updated_at) VALUES ('dlv_foreign', 'webhook', 'ep_b', 'ntf_x', 'x', 't', 'pending', 0, 8, ?, ?, ?)`).run(NOW, NOW, NOW)
    enqueue('mail_new', { channel: 'email' })
    expect(claim({ ...mailFull, now: NOW + 1 })).toEqual([])
    expect(claim({ ...mailFull, now: NOW + QUIET_MS }).map((r) => r.id)).toEqual(['dlv_foreign'])
  })

  it('a row of an ordering key that ends lets the next one be claimed at once', () => {
    saturatedBacklog()
    insertEndpoint(q.db, { id: 'ep_ord', ordered: true })
    const [k0, k1] = [enqueue('k0', { endpointId: 'ep_ord', orderingKey: 'K' }), enqueue('k1', { endpointId: 'ep_ord', orderingKey: 'K' })]
    const [first] = claim(busy)
    expect(first!.id).toBe(k0)
    expect(claim(busy)).toEqual([])
    q.deliveries.settle([{ id: k0, claimToken: first!.claimToken, outcome: { kind: 'success' } }], NOW)
    expect(claim(busy).map((r) => r.id)).toEqual([k1])
  })
})

describe('rows behind an older row of their ordering key (ordered endpoints)', () => {
  const nextAt = (id: string): number => q.deliveries.get(id)!.nextAttemptAt
  const finish = (rows: ClaimedDelivery[], kind: 'success' | 'dead', now = NOW) =>
    q.deliveries.settle(rows.map((r) => ({ id: r.id, claimToken: r.claimToken, outcome: { kind } })), now)

  it('wait out of the due queue, and the oldest left becomes due whenever a row of the key finishes', () => {
    insertEndpoint(q.db, { id: 'ep_ord', ordered: true })
    insertEndpoint(q.db, { id: 'ep_any' })
    const k = [0, 1, 2, 3].map((i) => enqueue(`k${i}`, { endpointId: 'ep_ord', orderingKey: 'K' }))
    const other = enqueue('other', { endpointId: 'ep_ord', orderingKey: 'L' })
    const unordered = [enqueue('u0', { endpointId: 'ep_any', orderingKey: 'K' }), enqueue('u1', { endpointId: 'ep_any', orderingKey: 'K' })]
    expect(k.map(nextAt)).toEqual([NOW, WAITING_IN_ORDER, WAITING_IN_ORDER, WAITING_IN_ORDER])
    expect([other, ...unordered].map(nextAt)).toEqual([NOW, NOW, NOW])
    expect(q.deliveries.oldestPendingAt()).toBe(NOW)

    const first = claim()
    expect(first.map((r) => r.id)).toEqual([k[0], other, ...unordered])
    finish(first, 'success', NOW + 10)
    expect(k.map(nextAt).slice(1)).toEqual([NOW + 10, WAITING_IN_ORDER, WAITING_IN_ORDER])
    // A retry keeps the key's turn: the rows behind it go on waiting.
    const [second] = claim({ now: NOW + 10 })
    expect(second!.id).toBe(k[1])
    q.deliveries.settle([{ id: k[1]!, claimToken: second!.claimToken, outcome: { kind: 'retry', at: NOW + 1000 } }], NOW + 10)
    expect(claim({ now: NOW + 500 })).toEqual([])
    expect(nextAt(k[2]!)).toBe(WAITING_IN_ORDER)
    // Dead ends the turn as success does.
    const retried = claim({ now: NOW + 1000 })
    expect(retried.map((r) => r.id)).toEqual([k[1]])
    finish(retried, 'dead', NOW + 1000)
    expect(claim({ now: NOW + 1000 }).map((r) => r.id)).toEqual([k[2]])
    expect(nextAt(k[3]!)).toBe(WAITING_IN_ORDER)
  })

  it('a retry that spends the last attempt, and a lease that runs out with none left, end the turn too', () => {
    // The trigger fires on completed_at (schema v13): each of these sets it with the final status.
    insertEndpoint(q.db, { id: 'ep_ord', ordered: true })
    const k = [0, 1, 2].map((i) => enqueue(`k${i}`, { endpointId: 'ep_ord', orderingKey: 'K', maxAttempts: 1 }))
    const [first] = claim()
    q.deliveries.settle([{ id: k[0]!, claimToken: first!.claimToken, outcome: { kind: 'retry', at: NOW + 1000 } }], NOW + 1)
    expect(q.deliveries.get(k[0]!)!.status).toBe('dead')
    expect(k.map(nextAt).slice(1)).toEqual([NOW + 1, WAITING_IN_ORDER])
    const [second] = claim({ now: NOW + 1, leaseMarginMs: 15_000 })
    expect(second!.id).toBe(k[1])
    // Its lease runs out: the row is dead (no attempt left) and the next one of the key is due.
    expect(claim({ now: second!.leaseUntil! + 1 }).map((r) => r.id)).toEqual([k[2]])
    expect(q.deliveries.get(k[1]!)!.status).toBe('dead')
  })

  it('turning ordered off releases the waiting rows; turning it on sets the followers aside again', () => {
    insertEndpoint(q.db, { id: 'ep_ord', ordered: true })
    const k = [0, 1, 2].map((i) => enqueue(`k${i}`, { endpointId: 'ep_ord', orderingKey: 'K' }))
    q.db.prepare(`UPDATE endpoints SET ordered = 0, updated_at = ? WHERE id = 'ep_ord'`).run(NOW + 5)
    expect(k.map(nextAt)).toEqual([NOW, NOW + 5, NOW + 5])
    q.db.prepare(`UPDATE endpoints SET ordered = 1, updated_at = ? WHERE id = 'ep_ord'`).run(NOW + 6)
    expect(k.map(nextAt)).toEqual([NOW, WAITING_IN_ORDER, WAITING_IN_ORDER])
  })

  it('recovered rows of one key wait behind the oldest of them', () => {
    insertEndpoint(q.db, { id: 'ep_ord', ordered: true })
    const k = [0, 1, 2].map((i) => enqueue(`k${i}`, { endpointId: 'ep_ord', orderingKey: 'K' }))
    q.db.prepare(`UPDATE deliveries SET status = 'dead', attempts = 8, completed_at = ?`).run(NOW)
    expect(q.deliveries.recover('ep_ord', NOW - 1, NOW + 1, NOW + 5)).toBe(3)
    expect(k.map(nextAt)).toEqual([NOW + 5, WAITING_IN_ORDER, WAITING_IN_ORDER])
    finish(claim({ now: NOW + 5 }), 'success', NOW + 6)
    expect(k.map(nextAt).slice(1)).toEqual([NOW + 6, WAITING_IN_ORDER])
  })

  it('a redelivered row waits behind an unfinished older row of its key', () => {
    insertEndpoint(q.db, { id: 'ep_ord', ordered: true })
    const [a, b] = [enqueue('a', { endpointId: 'ep_ord', orderingKey: 'K' }), enqueue('b', { endpointId: 'ep_ord', orderingKey: 'K' })]
    q.db.prepare(`UPDATE deliveries SET status = 'dead', completed_at = ? WHERE id IN (?, ?)`).run(NOW, a, b)
    expect([a, b].map((id) => q.deliveries.redeliver(id!, NOW + 3))).toEqual(['ok', 'ok'])
    expect([a, b].map((id) => nextAt(id!))).toEqual([NOW + 3, WAITING_IN_ORDER])
    finish(claim({ now: NOW + 3 }), 'success', NOW + 4)
    expect(nextAt(b!)).toBe(NOW + 4)
  })

  it('the repair at start releases a waiting row that has no older unfinished row', () => {
    insertEndpoint(q.db, { id: 'ep_ord', ordered: true })
    const [a, b, c] = [0, 1, 2].map((i) => enqueue(`k${i}`, { endpointId: 'ep_ord', orderingKey: 'K' }))
    // As if the head had ended without the trigger (a file written by an older version).
    q.db.prepare(`DROP TRIGGER deliveries_next_in_order`).run()
    q.db.prepare(`UPDATE deliveries SET status = 'success', completed_at = ? WHERE id = ?`).run(NOW, a)
    expect(nextAt(b!)).toBe(WAITING_IN_ORDER)
    expect(q.deliveries.releaseWaitingInOrder(NOW + 7)).toBe(1)
    expect([b, c].map((id) => nextAt(id!))).toEqual([NOW + 7, WAITING_IN_ORDER])
  })
})

describe('claim query plans', () => {
  const plan = (sql: string): string => {
    const params: Record<string, number | string> = {}
    for (const [, name] of sql.matchAll(/@(\w+)/g)) params[name!] = name === 'afterId' || name === 'endpointId' || name === 'rowids' || name === 'ids' ? '' : 0
    const stmt = q.db.prepare(`EXPLAIN QUERY PLAN ${sql}`)
    const positional = Array.from(sql.matchAll(/\?/g), () => (sql.includes('json_each(?)') ? '[]' : 0))
    const rows = positional.length === 0 ? stmt.all(params) : Object.keys(params).length === 0 ? stmt.all(positional) : stmt.all(positional, params)
    return (rows as { detail: string }[]).map((r) => r.detail).join('\n')
  }

  it('never scans the deliveries table, and checks the ordering barrier on its own index', () => {
    const plans = [...Object.entries(CLAIM_SQL), ['claim', CLAIM_ROWS(64)] as const].map(([name, sql]) => [name, plan(sql)] as const)
    for (const [name, p] of plans) expect(`${name}: ${p}`).not.toMatch(/SCAN (deliveries|d|o)\b(?! USING)/)
    // The barrier looks at unfinished rows only; the endpoint's history may be millions of rows.
    for (const name of ['window', 'ofKey'] as const) {
      expect(plans.find(([n]) => n === name)![1]).toMatch(/SEARCH o USING INDEX deliveries_order_barrier/)
    }
    expect(plans.find(([n]) => n === 'dueEndpoints')![1]).toMatch(/deliveries_endpoint_due/)
  })
})
