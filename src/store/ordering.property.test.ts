/**
 * Property test of the ordering mechanism on ordered endpoints (SPEC §1 "Ordering on request"):
 * a real queue driven through random enqueues, claims (some handed over to the per-endpoint
 * path), settles, lease expiries, stale settles, redeliveries, recoveries, kills, pauses,
 * disables, deletes and `ordered` toggles. After every step: (1) at most one row per key of an
 * ordered endpoint is in flight, (2) the oldest unfinished row of a key never waits, (3) only
 * keyed rows of ordered endpoints wait, (5) a claim takes a keyed row of an ordered endpoint only
 * when no older row of its key is unfinished and none is in flight, and no row of a paused
 * endpoint; at the end (4) a drain finishes every row. The seed is fixed by test/setup/fast-check.ts.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { WAITING_IN_ORDER, type ClaimedDelivery, type DeliveryStatus, type Outcome } from './delivery-types.js'
import { insertEndpoint, openTestQueue, row, type TestQueue } from '../../test/queue-helpers.js'

const NOW = Date.UTC(2026, 0, 1)
/** ep_a and ep_b start ordered, ep_c does not; `toggle` flips any of them. */
const ENDPOINTS = [
  { id: 'ep_a', ordered: true },
  { id: 'ep_b', ordered: true },
  { id: 'ep_c', ordered: false },
] as const
const KEYS = ['k1', 'k2', null] as const
const TIMEOUT_MS = 1_000
const LEASE_MARGIN_MS = 15_000
const UNFINISHED: readonly DeliveryStatus[] = ['pending', 'in_flight']
const FIRST_DUE = `SELECT endpoint_id FROM deliveries WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT 1`

type Finish = 'success' | 'retry' | 'dead' | 'release' | 'snooze'
type Op =
  | { t: 'enqueue'; ep: number; key: number; maxAttempts: number; count: number }
  | { t: 'claim'; limit: number; advance: number; cap: boolean }
  | { t: 'settle'; picks: { pick: number; outcome: Finish; delay: number }[] }
  | { t: 'expire'; all: boolean; limit: number }
  | { t: 'stale'; pick: number }
  | { t: 'redeliver'; pick: number; busy: boolean }
  | { t: 'recover'; ep: number }
  | { t: 'kill'; ep: number }
  | { t: 'toggle'; ep: number }
  | { t: 'pause'; ep: number; ms: number; defer: boolean }
  | { t: 'disable'; ep: number; kill: boolean }
  | { t: 'delete'; ep: number; cancel: boolean }

// Skewed towards ep_a and k1, so keys collect several rows and their turns change often.
const ep = fc.constantFrom(0, 0, 1, 2)
const key = fc.constantFrom(0, 0, 1, 2)
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    // `count` rows at once to one key, so keys often have rows waiting behind their head.
    arbitrary: fc.record({ t: fc.constant('enqueue' as const), ep, key, maxAttempts: fc.integer({ min: 1, max: 3 }), count: fc.integer({ min: 1, max: 3 }) }),
  },
  {
    weight: 6,
    // `cap` leaves no free slot to the endpoint of the oldest due row, so the claim hands over to
    // its per-endpoint path at once.
    arbitrary: fc.record({
      t: fc.constant('claim' as const),
      limit: fc.integer({ min: 1, max: 4 }),
      advance: fc.constantFrom(0, 1, 5, 50, 200),
      cap: fc.boolean(),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant('settle' as const),
      picks: fc.array(
        fc.record({ pick: fc.nat({ max: 7 }), outcome: fc.constantFrom<Finish>('success', 'retry', 'dead', 'release', 'snooze'), delay: fc.constantFrom(0, 10, 100) }),
        { minLength: 1, maxLength: 3 },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('expire' as const), all: fc.boolean(), limit: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('stale' as const), pick: fc.nat({ max: 7 }) }) },
  // `busy` picks a row whose key still has unfinished rows: it comes back behind or ahead of them.
  { weight: 3, arbitrary: fc.record({ t: fc.constant('redeliver' as const), pick: fc.nat({ max: 15 }), busy: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('recover' as const), ep }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('kill' as const), ep }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('toggle' as const), ep }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('pause' as const), ep, ms: fc.constantFrom(0, 100, 300), defer: fc.boolean() }) },
  // Disabling and deleting kill or cancel the endpoint's pending rows, as the API does, or not
  // (the race the claim and settle guard against): then the claim or settle ends them.
  { weight: 1, arbitrary: fc.record({ t: fc.constant('disable' as const), ep, kill: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('delete' as const), ep: fc.constantFrom(1, 2), cancel: fc.boolean() }) },
)

interface Row {
  id: string
  endpointId: string
  orderingKey: string | null
  status: DeliveryStatus
  nextAttemptAt: number
  claimToken: string | null
  leaseUntil: number | null
}

/** One run: the queue, the injected time, and the claims the test (the only worker) holds. */
class Run {
  now = NOW
  private seq = 0
  /** id → token of the claims the worker holds; a row leaving in_flight moves its token to `stale`. */
  readonly held = new Map<string, string>()
  readonly stale: { id: string; token: string }[] = []
  /** Rows whose current claim was made while their endpoint was not ordered (invariant 1's exception). */
  readonly claimedUnordered = new Set<string>()

  constructor(readonly q: TestQueue) {
    for (const e of ENDPOINTS) insertEndpoint(q.db, { id: e.id, ordered: e.ordered, timeoutMs: TIMEOUT_MS })
  }

  rows(): Row[] {
    return this.q.db
      .prepare(`SELECT id, endpoint_id AS endpointId, ordering_key AS orderingKey, status, next_attempt_at AS nextAttemptAt,
          claim_token AS claimToken, lease_until AS leaseUntil FROM deliveries ORDER BY id`)
      .all() as Row[]
  }

  gone(): Set<string> {
    return new Set(this.q.db.prepare('SELECT id FROM endpoints WHERE disabled = 1 OR deleted_at IS NOT NULL').pluck().all() as string[])
  }

  ordered(): Set<string> {
    return new Set(this.q.db.prepare('SELECT id FROM endpoints WHERE ordered = 1').pluck().all() as string[])
  }

  claim(limit: number, cap = false): ClaimedDelivery[] {
    const full = cap ? this.q.db.prepare(FIRST_DUE).pluck().get(this.now) : undefined
    const capacity = full === undefined ? undefined : (id: string | null): number => (id === full ? 0 : 100)
    const paused = new Set(this.q.db.prepare('SELECT id FROM endpoints WHERE paused_until > ?').pluck().all(this.now) as string[])
    const claimed = this.q.deliveries.claimDue({ limit, now: this.now, defaultTimeoutMs: TIMEOUT_MS, leaseMarginMs: LEASE_MARGIN_MS, capacity })
    const ordered = this.ordered()
    const rows = this.rows()
    for (const c of claimed) {
      expect({ claimed: c.id, paused: paused.has(c.endpointId!) }).toEqual({ claimed: c.id, paused: false })
      this.held.set(c.id, c.claimToken)
      if (ordered.has(c.endpointId!)) this.claimedUnordered.delete(c.id)
      else this.claimedUnordered.add(c.id)
      // Invariant 5: a claim on an ordered endpoint takes the oldest unfinished row of its key,
      // and only while no other row of the key is in flight.
      if (c.orderingKey === null || !ordered.has(c.endpointId!)) continue
      const others = rows.filter((r) => r.endpointId === c.endpointId && r.orderingKey === c.orderingKey && r.id !== c.id)
      const older = others.filter((r) => UNFINISHED.includes(r.status) && r.id < c.id).map((r) => r.id)
      const inFlight = others.filter((r) => r.status === 'in_flight').map((r) => r.id)
      expect({ claimed: c.id, older, inFlight }).toEqual({ claimed: c.id, older: [], inFlight: [] })
    }
    return claimed
  }

  apply(op: Op): void {
    const d = this.q.deliveries
    switch (op.t) {
      case 'enqueue': {
        const e = ENDPOINTS[op.ep]!.id
        // The API gives a disabled or deleted endpoint no new deliveries.
        if (this.gone().has(e)) break
        for (let i = 0; i < op.count; i++) {
          d.enqueue(row(`r${this.seq++}`, this.now, { endpointId: e, orderingKey: KEYS[op.key], maxAttempts: op.maxAttempts }), this.now)
        }
        break
      }
      case 'claim':
        this.now += op.advance
        this.claim(op.limit, op.cap)
        break
      case 'expire': {
        const leases = this.rows().flatMap((r) => (r.status === 'in_flight' ? [r.leaseUntil!] : []))
        if (leases.length > 0) this.now = Math.max(this.now, op.all ? Math.max(...leases) : Math.min(...leases))
        this.now += 1
        this.claim(op.limit)
        break
      }
      case 'settle': {
        // With nothing in hand the worker claims first, so settles do not go to waste.
        if (this.held.size === 0) this.claim(4)
        const ids = [...this.held.keys()].sort()
        const seen = new Set<string>()
        const batch = op.picks.flatMap(({ pick, outcome, delay }) => {
          const id = ids[pick % Math.max(ids.length, 1)]
          if (id === undefined || seen.has(id)) return []
          seen.add(id)
          const kind: Outcome = outcome === 'retry' || outcome === 'snooze' ? { kind: outcome, at: this.now + delay } : { kind: outcome }
          return [{ id, claimToken: this.held.get(id)!, outcome: kind }]
        })
        const results = d.settle(batch, this.now)
        expect(results.map((r) => r.result)).toEqual(batch.map(() => 'settled'))
        break
      }
      case 'stale': {
        const s = this.stale[op.pick % Math.max(this.stale.length, 1)]
        if (!s) break
        const before = d.get(s.id)
        expect(d.settle([{ id: s.id, claimToken: s.token, outcome: { kind: 'success' } }], this.now)).toEqual([{ result: 'missed' }])
        expect(d.get(s.id)).toEqual(before)
        break
      }
      case 'redeliver': {
        const rows = this.rows()
        const busy = new Set(rows.flatMap((r) => (UNFINISHED.includes(r.status) ? [`${r.endpointId}/${r.orderingKey}`] : [])))
        const finished = rows.filter((r) => !UNFINISHED.includes(r.status) && (!op.busy || busy.has(`${r.endpointId}/${r.orderingKey}`)))
        const r = finished[op.pick % Math.max(finished.length, 1)]
        if (r) expect(d.redeliver(r.id, this.now)).toBe(this.gone().has(r.endpointId) ? 'endpoint_unavailable' : 'ok')
        break
      }
      case 'recover': {
        const e = ENDPOINTS[op.ep]!.id
        const dead = this.rows().filter((r) => r.endpointId === e && r.status === 'dead').length
        expect(d.recover(e, 0, this.now + 1, this.now)).toBe(dead)
        break
      }
      case 'kill':
        d.killPendingForEndpoint(ENDPOINTS[op.ep]!.id, 'killed', this.now)
        break
      case 'toggle':
        this.q.db.prepare('UPDATE endpoints SET ordered = 1 - ordered, updated_at = ? WHERE id = ?').run(this.now, ENDPOINTS[op.ep]!.id)
        break
      case 'pause': {
        // A breaker pause: claims skip the endpoint until then; the dispatcher also defers its
        // pending rows, and without that they stay due behind the pause.
        const e = ENDPOINTS[op.ep]!.id
        this.q.db.prepare('UPDATE endpoints SET paused_until = ? WHERE id = ?').run(this.now + op.ms, e)
        if (op.defer) d.deferPendingForEndpoint(e, this.now + op.ms, this.now)
        break
      }
      case 'disable': {
        const e = ENDPOINTS[op.ep]!.id
        this.q.db.prepare('UPDATE endpoints SET disabled = 1 - disabled, updated_at = ? WHERE id = ?').run(this.now, e)
        if (op.kill && this.gone().has(e)) d.killPendingForEndpoint(e, 'endpoint_disabled', this.now)
        break
      }
      case 'delete': {
        const e = ENDPOINTS[op.ep]!.id
        this.q.db.prepare('UPDATE endpoints SET deleted_at = coalesce(deleted_at, ?), updated_at = ? WHERE id = ?').run(this.now, this.now, e)
        if (op.cancel) d.cancelForEndpoint(e, this.now)
        break
      }
    }
    this.reconcile()
  }

  /** Moves the tokens of rows no longer in flight under that claim (settled, or lease expired) to `stale`. */
  private reconcile(): void {
    const live = new Map(this.rows().flatMap((r) => (r.status === 'in_flight' ? [[r.id, r.claimToken] as const] : [])))
    for (const [id, token] of this.held) {
      if (live.get(id) === token) continue
      this.held.delete(id)
      this.stale.push({ id, token })
    }
    // The test is the only worker: every in-flight row is one of its claims.
    expect([...live.keys()].sort()).toEqual([...this.held.keys()].sort())
  }

  /** Invariants 1–3 over the whole table. */
  check(): void {
    const ordered = this.ordered()
    const byKey = new Map<string, Row[]>()
    for (const r of this.rows()) {
      const waiting = r.status === 'pending' && r.nextAttemptAt === WAITING_IN_ORDER
      // 3: only a keyed row of an ordered endpoint ever waits.
      if (waiting) expect({ id: r.id, endpoint: r.endpointId, key: r.orderingKey, ordered: ordered.has(r.endpointId) }).toMatchObject({ ordered: true })
      if (waiting) expect(r.orderingKey).not.toBeNull()
      if (r.orderingKey === null || !ordered.has(r.endpointId)) continue
      const k = `${r.endpointId}/${r.orderingKey}`
      byKey.set(k, [...(byKey.get(k) ?? []), r])
    }
    for (const [key, rows] of byKey) {
      // 1: at most one in-flight row per key, not counting claims made while the endpoint was
      // not ordered (toggling `ordered` on cannot take back requests already sent).
      const inFlight = rows.filter((r) => r.status === 'in_flight')
      const fromOrdered = inFlight.filter((r) => !this.claimedUnordered.has(r.id)).map((r) => r.id)
      expect({ key, fromOrdered: fromOrdered.length <= 1 ? [] : fromOrdered }).toEqual({ key, fromOrdered: [] })
      // 2: no stuck key: the oldest unfinished row (rows come in id order) is not waiting.
      const head = rows.find((r) => UNFINISHED.includes(r.status))
      if (head) expect({ key, head: head.id, waiting: head.status === 'pending' && head.nextAttemptAt === WAITING_IN_ORDER }).toMatchObject({ waiting: false })
    }
  }

  /** Invariant 4: claiming and settling everything as success, time advancing, ends every row. */
  drain(): void {
    // The start-up repair finds nothing to release when the triggers did their job.
    expect(this.q.deliveries.releaseWaitingInOrder(this.now)).toBe(0)
    const success = { kind: 'success' } as const
    for (let round = 0; round < 500; round++) {
      const held = [...this.held].map(([id, claimToken]) => ({ id, claimToken, outcome: success }))
      if (held.length > 0) this.q.deliveries.settle(held, this.now)
      this.reconcile()
      this.check()
      const { pending, in_flight } = this.q.deliveries.queueDepth()
      if (pending + in_flight === 0) return
      this.now += 1_000
      this.claim(10)
      this.reconcile()
      this.check()
    }
    const left = this.rows().filter((r) => UNFINISHED.includes(r.status))
    expect(left, 'rows still unfinished after 500 rounds').toEqual([])
  }
}

describe('ordered endpoints under random operation sequences', () => {
  it('keep one in flight per key, never strand a key, and finish every row', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 40, size: 'max' }), (ops) => {
        const q = openTestQueue()
        try {
          const run = new Run(q)
          for (const op of ops) {
            run.apply(op)
            run.check()
          }
          run.drain()
        } finally {
          q.cleanup()
        }
      }),
      { numRuns: 300 },
    )
  })
})
