/**
 * The queue on both backends driven through the same random steps, compared after every step
 * (SQLite's families lifted, PostgreSQL's over one pool): enqueues of ordered and unordered
 * endpoints' rows mixed with rows without an endpoint (`#<channel>` keys), claims with per-key
 * capacities and an excluded key under two owners, settles of every outcome (logged or not),
 * lease expiries, stale settles, redeliveries, recoveries, kills, pauses with deferred rows,
 * disables, deletes and `ordered` toggles. Each step must answer the same on both, and leave the
 * same rows and attempt log (ids mapped by creation order, claim tokens by owner prefix). On
 * PostgreSQL also, after every step: at most one row per key of an ordered endpoint in flight, and
 * the oldest unfinished row of a key never waiting. SQLite's own invariants are checked by
 * src/store/ordering.property.test.ts; equality carries them over.
 *
 * The compared claims have per-key capacities, an excluded key and a small limit, so both
 * claimers hand over to their turns by key: PostgreSQL's picks as SQLite's do. (SQLite alone may
 * skip that second path for QUIET_MS after one that found nothing; these steps have not met a
 * case where that changes what is claimed.) The second property checks saturating claims on
 * PostgreSQL against the invariants themselves.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { channelKey, WAITING_IN_ORDER, type Channel, type ClaimedDelivery, type Outcome } from '../deliveries.js'
import { BACKENDS, coreBackend, type CoreFamilies } from '../../../test/support/pg-core-backends.js'
import { row } from '../../../test/queue-helpers.js'

const NOW = Date.UTC(2026, 0, 1)
const ENDPOINTS = [
  { id: 'ep_a', ordered: true },
  { id: 'ep_b', ordered: true },
  { id: 'ep_c', ordered: false },
] as const
const CHANNELS: readonly Channel[] = ['inbox', 'email', 'notify-webhook']
const CLAIM_KEYS: readonly string[] = [...ENDPOINTS.map((e) => e.id), ...CHANNELS.map(channelKey)]
const KEYS = ['k1', 'k2', null] as const
const OWNERS = ['w1.', 'w2.'] as const

type Finish = 'success' | 'retry' | 'dead' | 'release' | 'snooze'
type Op =
  | { t: 'enqueue'; target: number; key: number; maxAttempts: number; count: number; later: number }
  | { t: 'claim'; limit: number; advance: number; caps: number[]; exclude: number; owner: number }
  | { t: 'settle'; picks: { pick: number; outcome: Finish; delay: number; log: boolean }[] }
  | { t: 'stale'; pick: number }
  | { t: 'redeliver'; pick: number }
  | { t: 'recover'; ep: number }
  | { t: 'kill'; ep: number }
  | { t: 'toggle'; ep: number }
  | { t: 'pause'; ep: number; ms: number; defer: boolean }
  | { t: 'disable'; ep: number; kill: boolean }
  | { t: 'delete'; ep: number; cancel: boolean }

const ep = fc.constantFrom(0, 0, 1, 2)
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('enqueue' as const),
      target: fc.constantFrom(0, 0, 1, 2, 3, 4, 4, 5),
      key: fc.constantFrom(0, 0, 1, 2),
      maxAttempts: fc.integer({ min: 1, max: 3 }),
      count: fc.integer({ min: 1, max: 3 }),
      later: fc.constantFrom(0, 0, 0, 150),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('claim' as const),
      limit: fc.integer({ min: 1, max: 4 }),
      advance: fc.constantFrom(0, 1, 5, 50, 200, 20_000),
      caps: fc.array(fc.constantFrom(0, 1, 2, 100), { minLength: CLAIM_KEYS.length, maxLength: CLAIM_KEYS.length }),
      exclude: fc.constantFrom(-1, -1, -1, 0, 3, 4),
      owner: fc.constantFrom(0, 1),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant('settle' as const),
      picks: fc.array(
        fc.record({
          pick: fc.nat({ max: 7 }),
          outcome: fc.constantFrom<Finish>('success', 'retry', 'dead', 'release', 'snooze'),
          delay: fc.constantFrom(0, 10, 100),
          log: fc.boolean(),
        }),
        { minLength: 1, maxLength: 3 },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('stale' as const), pick: fc.nat({ max: 7 }) }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('redeliver' as const), pick: fc.nat({ max: 15 }) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('recover' as const), ep }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('kill' as const), ep }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('toggle' as const), ep }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('pause' as const), ep, ms: fc.constantFrom(0, 100, 300), defer: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('disable' as const), ep, kill: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('delete' as const), ep: fc.constantFrom(1, 2), cancel: fc.boolean() }) },
)

const ROWS = `SELECT id, channel, endpoint_id, ordering_key, status, attempts, max_attempts, next_attempt_at, claim_token,
    lease_until, completed_at, updated_at, last_error, last_status_code FROM deliveries ORDER BY id`
const ATTEMPTS = `SELECT delivery_id, attempt, started_at, duration_ms, outcome, status_code, error, response_body FROM attempts ORDER BY id`

/** One backend's side of a run: its families, the ids it made (creation order) and the claims it holds. */
interface Side {
  f: CoreFamilies
  ids: string[]
  held: ClaimedDelivery[]
  stale: { id: string; token: string }[]
}

describe.runIf(BACKENDS.includes('postgres'))('the queue answers alike on SQLite and PostgreSQL (property)', () => {
  const sqlite = coreBackend('sqlite')
  const postgres = coreBackend('postgres')
  beforeAll(async () => {
    await sqlite.setup()
    await postgres.setup()
  })
  afterAll(async () => {
    await sqlite.teardown()
    await postgres.teardown()
  })

  /** Replaces each side's ids by their creation index and claim tokens by their owner, so the two compare. */
  const normal = (side: Side, v: unknown): unknown =>
    v === undefined ? undefined : JSON.parse(JSON.stringify(v), (_k, x: unknown) => {
      if (typeof x !== 'string') return x
      const i = side.ids.indexOf(x)
      if (i >= 0) return `#${i}`
      const owner = OWNERS.find((o) => x.startsWith(o) && /^[0-9a-f]{24}$/.test(x.slice(o.length)))
      if (owner) return `token:${owner}`
      if (/^[0-9a-f]{24}$/.test(x)) return 'token:'
      return x
    })

  /** Runs `step` on both sides (SQLite first, so ids are made in the same order) and compares its answers. */
  const both = async <T>(sides: Side[], step: (s: Side) => Promise<T>): Promise<T[]> => {
    const out: T[] = []
    for (const s of sides) out.push(await step(s))
    expect(normal(sides[1]!, out[1])).toEqual(normal(sides[0]!, out[0]))
    return out
  }

  it('through random steps', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 30 }), async (ops) => {
        const sides: Side[] = [
          { f: await sqlite.fresh(), ids: [], held: [], stale: [] },
          { f: await postgres.fresh(), ids: [], held: [], stale: [] },
        ]
        let now = NOW
        for (const s of sides) {
          for (const e of ENDPOINTS) {
            await s.f.exec(
              `INSERT INTO endpoints (id, url, secret, ordered, timeout_ms, max_concurrency, created_at, updated_at) VALUES (?, 'https://example.com/hook', 'whsec_test', ?, 1000, 1000, 0, 0)`,
              [e.id, e.ordered ? 1 : 0],
            )
          }
        }
        let seq = 0
        for (const op of ops) {
          switch (op.t) {
            case 'enqueue': {
              const n = seq++
              for (let i = 0; i < op.count; i++) {
                await both(sides, async (s) => {
                  const extra = op.target < 3 ? { endpointId: ENDPOINTS[op.target]!.id } : { channel: CHANNELS[op.target - 3]! }
                  const r = await s.f.deliveries.enqueue(
                    row(`r${n}.${i}`, now, { ...extra, orderingKey: KEYS[op.key]!, maxAttempts: op.maxAttempts, nextAttemptAt: now + op.later }),
                    now,
                  )
                  s.ids.push(r.id)
                  return r
                })
              }
              break
            }
            case 'claim': {
              now += op.advance
              await both(sides, async (s) => {
                const caps = new Map(CLAIM_KEYS.map((k, i) => [k, op.caps[i]!]))
                const inFlight = new Map<string, number>()
                for (const h of s.held) inFlight.set(h.endpointId ?? channelKey(h.channel), (inFlight.get(h.endpointId ?? channelKey(h.channel)) ?? 0) + 1)
                const rows = await s.f.deliveries.claimDue({ limit: op.limit, now, defaultTimeoutMs: 2000, leaseMarginMs: 15_000, owner: OWNERS[op.owner], capacity: (k) => (caps.get(k) ?? 100) - (inFlight.get(k) ?? 0), excludeEndpoints: op.exclude >= 0 ? [CLAIM_KEYS[op.exclude]!] : [] })
                // Claims whose lease ran out were taken back by this claim.
                const live = new Set((await s.f.all<{ id: string }>(`SELECT id FROM deliveries WHERE status = 'in_flight'`)).map((r) => r.id))
                for (const h of s.held.filter((x) => !live.has(x.id) || rows.some((r) => r.id === x.id))) s.stale.push({ id: h.id, token: h.claimToken })
                s.held = [...s.held.filter((x) => live.has(x.id) && !rows.some((r) => r.id === x.id)), ...rows]
                return rows
              })
              break
            }
            case 'settle': {
              await both(sides, async (s) => {
                if (s.held.length === 0) return []
                const chosen = new Map<string, (typeof op.picks)[number]>()
                for (const p of op.picks) chosen.set(s.held[p.pick % s.held.length]!.id, p)
                const input = [...chosen].map(([id, p]) => {
                  const h = s.held.find((x) => x.id === id)!
                  const at = now + p.delay
                  const outcome: Outcome = p.outcome === 'retry' || p.outcome === 'snooze' ? { kind: p.outcome, at } : { kind: p.outcome }
                  return { id, claimToken: h.claimToken, outcome, ...(p.log ? { attempt: { startedAt: now, durationMs: 3.4, statusCode: p.outcome === 'success' ? 200 : 503, error: p.outcome === 'success' ? null : 'x', responseBody: 'b' } } : {}) }
                })
                const out = await s.f.deliveries.settle(input, now)
                for (const i of input) s.stale.push({ id: i.id, token: i.claimToken })
                s.held = s.held.filter((h) => !chosen.has(h.id))
                return out
              })
              break
            }
            case 'stale':
              await both(sides, async (s) => {
                if (s.stale.length === 0) return []
                const st = s.stale[op.pick % s.stale.length]!
                return s.f.deliveries.settle([{ id: st.id, claimToken: st.token, outcome: { kind: 'success' }, attempt: { startedAt: now, durationMs: 1 } }], now)
              })
              break
            case 'redeliver':
              await both(sides, async (s) => (s.ids.length === 0 ? null : s.f.deliveries.redeliver(s.ids[op.pick % s.ids.length]!, now)))
              break
            case 'recover':
              await both(sides, (s) => s.f.deliveries.recover(ENDPOINTS[op.ep]!.id, NOW - 1, now + 1, now))
              break
            case 'kill':
              await both(sides, (s) => s.f.deliveries.killPendingForEndpoint(ENDPOINTS[op.ep]!.id, 'endpoint_disabled', now))
              break
            case 'toggle':
              await both(sides, (s) => s.f.exec('UPDATE endpoints SET ordered = 1 - ordered, updated_at = ? WHERE id = ?', [now, ENDPOINTS[op.ep]!.id]))
              break
            case 'pause':
              await both(sides, async (s) => {
                await s.f.exec('UPDATE endpoints SET paused_until = ? WHERE id = ?', [now + op.ms, ENDPOINTS[op.ep]!.id])
                return op.defer ? s.f.deliveries.deferPendingForEndpoint(ENDPOINTS[op.ep]!.id, now + op.ms, now) : 0
              })
              break
            case 'disable':
              await both(sides, async (s) => {
                await s.f.exec('UPDATE endpoints SET disabled = 1 - disabled, updated_at = ? WHERE id = ?', [now, ENDPOINTS[op.ep]!.id])
                return op.kill ? s.f.deliveries.killPendingForEndpoint(ENDPOINTS[op.ep]!.id, 'endpoint_disabled', now) : 0
              })
              break
            case 'delete':
              await both(sides, async (s) => {
                await s.f.exec('UPDATE endpoints SET deleted_at = coalesce(deleted_at, ?), updated_at = ? WHERE id = ?', [now, now, ENDPOINTS[op.ep]!.id])
                return op.cancel ? s.f.deliveries.cancelForEndpoint(ENDPOINTS[op.ep]!.id, now) : 0
              })
              break
          }
          // The same rows and the same attempt log on both.
          await both(sides, (s) => s.f.all(ROWS))
          await both(sides, (s) => s.f.all(ATTEMPTS))
          await both(sides, (s) => s.f.deliveries.countByStatus())
          await both(sides, (s) => s.f.deliveries.oldestPendingAt())
          // PostgreSQL's own: one row per key of an ordered endpoint in flight, and a key's oldest unfinished row never waits.
          const pg = sides[1]!.f
          const doubled = await pg.all<{ n: number }>(
            `SELECT count(*) AS n FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
              WHERE d.status = 'in_flight' AND d.ordering_key IS NOT NULL AND e.ordered = 1 GROUP BY d.endpoint_id, d.ordering_key HAVING count(*) > 1`,
          )
          // A row claimed while its endpoint was unordered may share its key's turn once ordered is set again.
          if (!ops.some((o) => o.t === 'toggle')) expect(doubled).toEqual([])
          const waitingHeads = await pg.all(
            `SELECT d.id FROM deliveries d WHERE d.status = 'pending' AND d.next_attempt_at = ${WAITING_IN_ORDER}
              AND NOT EXISTS (SELECT 1 FROM deliveries o WHERE o.endpoint_id = d.endpoint_id AND o.ordering_key = d.ordering_key
                AND o.status IN ('pending', 'in_flight') AND o.id < d.id)`,
          )
          expect(waitingHeads).toEqual([])
        }
      }),
      { numRuns: 40 },
    )
  }, 240_000)
  it('saturating claims on PostgreSQL keep every key within its room, and leave no key with room behind', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 30 }), async (ops) => {
        const f = await postgres.fresh()
        const s: Side = { f, ids: [], held: [], stale: [] }
        let now = NOW
        for (const e of ENDPOINTS) {
          await f.exec(
            `INSERT INTO endpoints (id, url, secret, ordered, timeout_ms, max_concurrency, created_at, updated_at) VALUES (?, 'https://example.com/hook', 'whsec_test', ?, 1000, 1000, 0, 0)`,
            [e.id, e.ordered ? 1 : 0],
          )
        }
        let seq = 0
        const keyOf = (r: { endpointId: string | null; channel: string }): string => r.endpointId ?? channelKey(r.channel)
        for (const op of ops) {
          if (op.t === 'enqueue') {
            const n = seq++
            for (let i = 0; i < op.count; i++) {
              const extra = op.target < 3 ? { endpointId: ENDPOINTS[op.target]!.id } : { channel: CHANNELS[op.target - 3]! }
              s.ids.push((await f.deliveries.enqueue(row(`r${n}.${i}`, now, { ...extra, orderingKey: KEYS[op.key]!, maxAttempts: op.maxAttempts, nextAttemptAt: now + op.later }), now)).id)
            }
          } else if (op.t === 'claim') {
            now += op.advance
            const live = async (): Promise<{ id: string; key: string }[]> =>
              f.all(`SELECT id, coalesce(endpoint_id, '#' || channel) AS key FROM deliveries WHERE status = 'in_flight' AND lease_until > ?`, [now])
            const before = await live()
            const caps = new Map(CLAIM_KEYS.map((k, i) => [k, op.caps[i]!]))
            const used = new Map<string, number>()
            for (const h of before) used.set(h.key, (used.get(h.key) ?? 0) + 1)
            const room = (k: string): number => (caps.get(k) ?? 100) - (used.get(k) ?? 0)
            const excluded = op.exclude >= 0 ? CLAIM_KEYS[op.exclude]! : null
            const rows = await f.deliveries.claimDue({ limit: op.limit, now, defaultTimeoutMs: 2000, owner: OWNERS[op.owner], capacity: room, excludeEndpoints: excluded ? [excluded] : [] })
            expect(rows.length).toBeLessThanOrEqual(op.limit)
            const taken = new Map<string, number>()
            for (const r of rows) {
              const k = keyOf(r)
              taken.set(k, (taken.get(k) ?? 0) + 1)
              expect(k).not.toBe(excluded)
              expect(before.some((b) => b.id === r.id)).toBe(false)
            }
            for (const [k, n] of taken) expect(n).toBeLessThanOrEqual(room(k))
            const paused = await f.all<{ id: string }>(`SELECT id FROM endpoints WHERE paused_until > ?`, [now])
            for (const r of rows) expect(paused.some((p) => p.id === r.endpointId)).toBe(false)
            if (rows.length < op.limit) {
              // Short of the limit: every due row left is of a full or excluded key, or held back.
              const left = await f.all<{ id: string; key: string }>(
                `SELECT d.id, coalesce(d.endpoint_id, '#' || d.channel) AS key FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id
                  WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (e.id IS NULL OR ((e.paused_until IS NULL OR e.paused_until <= ?)
                    AND NOT (d.ordering_key IS NOT NULL AND e.ordered = 1 AND EXISTS (SELECT 1 FROM deliveries o WHERE o.endpoint_id = d.endpoint_id
                      AND o.ordering_key = d.ordering_key AND o.status IN ('pending', 'in_flight') AND o.id <> d.id
                      AND (o.status = 'in_flight' OR o.id < d.id)))))`,
                [now, now],
              )
              for (const l of left) expect(l.key === excluded || room(l.key) - (taken.get(l.key) ?? 0) <= 0).toBe(true)
            }
            s.held = [...s.held.filter((h) => !rows.some((r) => r.id === h.id)), ...rows]
          } else if (op.t === 'settle' && s.held.length > 0) {
            const chosen = new Map<string, (typeof op.picks)[number]>()
            for (const p of op.picks) chosen.set(s.held[p.pick % s.held.length]!.id, p)
            await f.deliveries.settle(
              [...chosen].map(([id, p]) => ({
                id,
                claimToken: s.held.find((x) => x.id === id)!.claimToken,
                outcome: p.outcome === 'retry' || p.outcome === 'snooze' ? { kind: p.outcome, at: now + p.delay } : { kind: p.outcome },
              })),
              now,
            )
            s.held = s.held.filter((h) => !chosen.has(h.id))
          } else if (op.t === 'redeliver' && s.ids.length > 0) {
            await f.deliveries.redeliver(s.ids[op.pick % s.ids.length]!, now)
          } else if (op.t === 'toggle') {
            await f.exec('UPDATE endpoints SET ordered = 1 - ordered, updated_at = ? WHERE id = ?', [now, ENDPOINTS[op.ep]!.id])
          } else if (op.t === 'pause') {
            await f.exec('UPDATE endpoints SET paused_until = ? WHERE id = ?', [now + op.ms, ENDPOINTS[op.ep]!.id])
          } else if (op.t === 'kill') {
            await f.deliveries.killPendingForEndpoint(ENDPOINTS[op.ep]!.id, 'endpoint_disabled', now)
          }
          if (!ops.some((o) => o.t === 'toggle')) {
            expect(
              await f.all(
                `SELECT d.endpoint_id FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
                  WHERE d.status = 'in_flight' AND d.ordering_key IS NOT NULL AND e.ordered = 1 GROUP BY d.endpoint_id, d.ordering_key HAVING count(*) > 1`,
              ),
            ).toEqual([])
          }
        }
      }),
      { numRuns: 40 },
    )
  }, 240_000)
})
