import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import type pg from 'pg'
import type { Async } from '../contract.js'
import { WAITING_IN_ORDER, type ClaimedDelivery, type ClaimOptions, type DeliveriesStore, type NewDelivery } from '../deliveries.js'
import { BACKENDS, coreBackend, testPool, type CoreFamilies } from '../../../test/support/pg-core-backends.js'
import { createPgDeliveriesStore } from './deliveries.js'
import { endpointLockKey, EXPIRE_EVERY_MS, newPgClaimState, RELEASE_EVERY_MS, type PgClaimState } from './delivery-claim.js'
import { PG_CLAIM_SQL } from './delivery-claim-sql.js'
import { row } from '../../../test/queue-helpers.js'

const NOW = Date.UTC(2026, 0, 1)
/** More rows than one claim window reads (4 × limit, min 256). */
const BACKLOG = 300

describe.each(BACKENDS)('claims (%s)', (kind) => {
  const backend = coreBackend(kind)
  let f: CoreFamilies
  beforeAll(() => backend.setup())
  afterAll(() => backend.teardown())
  beforeEach(async () => {
    f = await backend.fresh()
  })

  const enqueue = async (key: string, extra: Partial<NewDelivery> = {}): Promise<string> => (await f.deliveries.enqueue(row(key, NOW, extra), NOW)).id
  const claim = (extra: Partial<ClaimOptions> = {}): Promise<ClaimedDelivery[]> => f.deliveries.claimDue({ limit: 100, now: NOW, defaultTimeoutMs: 15_000, ...extra })
  const endpointsOf = (rows: ClaimedDelivery[]): (string | null)[] => rows.map((r) => r.endpointId)
  const insertEndpoint = (id: string, e: { ordered?: boolean; pausedUntil?: number; deletedAt?: number } = {}): Promise<void> =>
    f.exec(
      `INSERT INTO endpoints (id, url, secret, ordered, paused_until, deleted_at, created_at, updated_at) VALUES (?, 'https://example.com/hook', 'whsec_test', ?, ?, ?, 0, 0)`,
      [id, e.ordered ? 1 : 0, e.pausedUntil ?? null, e.deletedAt ?? null],
    )
  const nextAt = async (id: string): Promise<number> => (await f.deliveries.get(id))!.nextAttemptAt
  const nextAts = async (ids: string[]): Promise<number[]> => Promise.all(ids.map(nextAt))
  const finish = (rows: ClaimedDelivery[], k: 'success' | 'dead', now = NOW) =>
    f.deliveries.settle(rows.map((r) => ({ id: r.id, claimToken: r.claimToken, outcome: { kind: k } })), now)
  const saturatedBacklog = async (): Promise<void> => {
    await insertEndpoint('ep_busy')
    for (let i = 0; i < BACKLOG; i++) await enqueue(`busy${i}`, { endpointId: 'ep_busy', nextAttemptAt: NOW - 60_000 })
  }

  describe('behind a saturated endpoint (docs/delivery.md isolation)', () => {
    it('takes the other endpoints and the rows without one, claim after claim, never the excluded backlog', async () => {
      await saturatedBacklog()
      await insertEndpoint('ep_b')
      await insertEndpoint('ep_c')
      for (let i = 0; i < 5; i++) await enqueue(`b${i}`, { endpointId: 'ep_b' })
      for (let i = 0; i < 5; i++) await enqueue(`c${i}`, { endpointId: 'ep_c' })
      for (let i = 0; i < 3; i++) await enqueue(`n${i}`, { channel: 'inbox' })
      const opts = { limit: 4, excludeEndpoints: ['ep_busy'] }
      const got: (string | null)[] = []
      for (let i = 0; i < 3; i++) {
        const rows = await claim(opts)
        expect(rows).toHaveLength(4)
        got.push(...endpointsOf(rows))
      }
      got.push(...endpointsOf(await claim(opts)))
      expect(await claim(opts)).toEqual([])
      expect(got.sort()).toEqual([...Array(5).fill('ep_b'), ...Array(5).fill('ep_c'), null, null, null].sort())
      expect(await f.deliveries.countByStatus()).toMatchObject({ pending: BACKLOG, in_flight: 13 })
    })

    it('keeps capacity, pauses, the ordering barrier, exhausted rows and gone endpoints behind it', async () => {
      await saturatedBacklog()
      await insertEndpoint('ep_cap')
      await insertEndpoint('ep_paused', { pausedUntil: NOW + 5_000 })
      await insertEndpoint('ep_ord', { ordered: true })
      await insertEndpoint('ep_gone', { deletedAt: NOW })
      for (let i = 0; i < 5; i++) await enqueue(`cap${i}`, { endpointId: 'ep_cap' })
      const paused = await enqueue('paused', { endpointId: 'ep_paused' })
      const [first, second] = [await enqueue('ord0', { endpointId: 'ep_ord', orderingKey: 'k' }), await enqueue('ord1', { endpointId: 'ep_ord', orderingKey: 'k' })]
      const gone = await enqueue('gone', { endpointId: 'ep_gone' })
      const spent = await enqueue('spent', { endpointId: 'ep_ord', maxAttempts: 1 })
      await f.exec('UPDATE deliveries SET attempts = 1 WHERE id = ?', [spent])
      const cap: Record<string, number> = { ep_busy: 0, ep_cap: 2 }
      const rows = await claim({ limit: 10, capacity: (id) => cap[id] ?? 100 })
      expect(endpointsOf(rows).filter((e) => e === 'ep_cap')).toHaveLength(2)
      expect(rows.filter((r) => r.endpointId === 'ep_ord').map((r) => r.id)).toEqual([first])
      expect(rows).toHaveLength(3)
      expect((await f.deliveries.get(second))!.status).toBe('pending')
      expect(await f.deliveries.get(paused)).toMatchObject({ status: 'pending', attempts: 0 })
      expect(await f.deliveries.get(gone)).toMatchObject({ status: 'cancelled', lastError: 'endpoint_deleted' })
      expect(await f.deliveries.get(spent)).toMatchObject({ status: 'dead', lastError: 'attempts_exhausted' })
    })

    it('rows without an endpoint take slots per channel, so an email backlog holds back neither inbox rows nor endpoints', async () => {
      await insertEndpoint('ep_quiet')
      for (let i = 0; i < 50; i++) await enqueue(`mail${i}`, { channel: 'email', nextAttemptAt: NOW - 1000 })
      const inbox = await enqueue('in', { channel: 'inbox' })
      const quiet = await enqueue('q', { endpointId: 'ep_quiet' })
      const asked = new Set<string>()
      const rows = await claim({ limit: 32, capacity: (key) => (asked.add(key), key === '#email' ? 4 : 16) })
      expect(rows.filter((r) => r.channel === 'email')).toHaveLength(4)
      expect(rows.filter((r) => r.channel !== 'email').map((r) => r.id).sort()).toEqual([inbox, quiet].sort())
      expect([...asked].sort()).toEqual(['#email', '#inbox', 'ep_quiet'])
      expect((await claim({ limit: 32 })).filter((r) => r.channel === 'email')).toHaveLength(32)
    })
  })

  describe('rows behind an older row of their ordering key (ordered endpoints)', () => {
    it('wait out of the due queue, and the oldest left becomes due whenever a row of the key finishes', async () => {
      await insertEndpoint('ep_ord', { ordered: true })
      await insertEndpoint('ep_any')
      const k: string[] = []
      for (let i = 0; i < 4; i++) k.push(await enqueue(`k${i}`, { endpointId: 'ep_ord', orderingKey: 'K' }))
      const other = await enqueue('other', { endpointId: 'ep_ord', orderingKey: 'L' })
      const unordered = [await enqueue('u0', { endpointId: 'ep_any', orderingKey: 'K' }), await enqueue('u1', { endpointId: 'ep_any', orderingKey: 'K' })]
      expect(await nextAts(k)).toEqual([NOW, WAITING_IN_ORDER, WAITING_IN_ORDER, WAITING_IN_ORDER])
      expect(await nextAts([other, ...unordered])).toEqual([NOW, NOW, NOW])
      expect(await f.deliveries.oldestPendingAt()).toBe(NOW)
      const first = await claim()
      expect(first.map((r) => r.id)).toEqual([k[0], other, ...unordered])
      await finish(first, 'success', NOW + 10)
      expect((await nextAts(k)).slice(1)).toEqual([NOW + 10, WAITING_IN_ORDER, WAITING_IN_ORDER])
      const [second] = await claim({ now: NOW + 10 })
      expect(second!.id).toBe(k[1])
      await f.deliveries.settle([{ id: k[1]!, claimToken: second!.claimToken, outcome: { kind: 'retry', at: NOW + 1000 } }], NOW + 10)
      expect(await claim({ now: NOW + 500 })).toEqual([])
      expect(await nextAt(k[2]!)).toBe(WAITING_IN_ORDER)
      const retried = await claim({ now: NOW + 1000 })
      expect(retried.map((r) => r.id)).toEqual([k[1]])
      await finish(retried, 'dead', NOW + 1000)
      expect((await claim({ now: NOW + 1000 })).map((r) => r.id)).toEqual([k[2]])
      expect(await nextAt(k[3]!)).toBe(WAITING_IN_ORDER)
    })

    it('recovered rows of one key wait behind the oldest of them', async () => {
      await insertEndpoint('ep_ord', { ordered: true })
      const k: string[] = []
      for (let i = 0; i < 3; i++) k.push(await enqueue(`k${i}`, { endpointId: 'ep_ord', orderingKey: 'K' }))
      await f.exec(`UPDATE deliveries SET status = 'dead', attempts = 8, completed_at = ?`, [NOW])
      expect(await f.deliveries.recover('ep_ord', NOW - 1, NOW + 1, NOW + 5)).toBe(3)
      expect(await nextAts(k)).toEqual([NOW + 5, WAITING_IN_ORDER, WAITING_IN_ORDER])
      await finish(await claim({ now: NOW + 5 }), 'success', NOW + 6)
      expect((await nextAts(k)).slice(1)).toEqual([NOW + 6, WAITING_IN_ORDER])
    })

    it('a redelivered row waits behind an unfinished older row of its key', async () => {
      await insertEndpoint('ep_ord', { ordered: true })
      const [a, b] = [await enqueue('a', { endpointId: 'ep_ord', orderingKey: 'K' }), await enqueue('b', { endpointId: 'ep_ord', orderingKey: 'K' })]
      await f.exec(`UPDATE deliveries SET status = 'dead', completed_at = ? WHERE id IN (?, ?)`, [NOW, a, b])
      expect([await f.deliveries.redeliver(a, NOW + 3), await f.deliveries.redeliver(b, NOW + 3)]).toEqual(['ok', 'ok'])
      expect(await nextAts([a, b])).toEqual([NOW + 3, WAITING_IN_ORDER])
      await finish(await claim({ now: NOW + 3 }), 'success', NOW + 4)
      expect(await nextAt(b)).toBe(NOW + 4)
    })
  })
})

/**
 * Two nodes on one PostgreSQL database: two pools, two delivery families, claiming at the same
 * time (Promise.all puts their transactions on the server together). What each node's memory
 * knows is left out (no capacity callback), so the limits seen here are the database's own.
 */
describe.runIf(BACKENDS.includes('postgres'))('claims of two nodes on one PostgreSQL database', () => {
  const backend = coreBackend('postgres')
  let f: CoreFamilies
  let pools: pg.Pool[] = []
  let nodes: Async<DeliveriesStore>[] = []
  beforeAll(async () => {
    await backend.setup()
    pools = [testPool(backend.url(), 3), testPool(backend.url(), 3)]
    nodes = pools.map((p) => createPgDeliveriesStore(p))
  })
  afterAll(async () => {
    for (const p of pools) await p.end()
    await backend.teardown()
  })
  beforeEach(async () => {
    f = await backend.fresh()
  })

  const insertEndpoint = (id: string, e: { maxConcurrency?: number; rateLimit?: number; ordered?: boolean; pauseCount?: number; pausedUntil?: number } = {}): Promise<void> =>
    f.exec(
      `INSERT INTO endpoints (id, url, secret, max_concurrency, rate_limit, ordered, pause_count, paused_until, created_at, updated_at)
       VALUES (?, 'https://example.com/hook', 'whsec_test', ?, ?, ?, ?, ?, 0, 0)`,
      [id, e.maxConcurrency ?? 16, e.rateLimit ?? null, e.ordered ? 1 : 0, e.pauseCount ?? 0, e.pausedUntil ?? null],
    )
  const enqueueMany = async (n: number, extra: (i: number) => Partial<NewDelivery>): Promise<string[]> => {
    const out: string[] = []
    for (let i = 0; i < n; i++) out.push((await f.deliveries.enqueue(row(`r${i}`, NOW, extra(i)), NOW)).id)
    return out
  }
  /** One round: both nodes claim at once; returns what each got. */
  const bothClaim = (now: number, limit = 10): Promise<ClaimedDelivery[][]> =>
    Promise.all(nodes.map((n, i) => n.claimDue({ limit, now, defaultTimeoutMs: 15_000, owner: `node${i}.` })))
  const inFlight = async (endpointId?: string): Promise<number> =>
    (await f.all<{ n: number }>(`SELECT count(*) AS n FROM deliveries WHERE status = 'in_flight'${endpointId ? ' AND endpoint_id = ?' : ''}`, endpointId ? [endpointId] : []))[0]!.n

  it('an idle poll costs one read; a claim told rows were made due (dueHint) goes straight to its transaction', async () => {
    const query = vi.spyOn(pools[0]!, 'query')
    // pg.Pool's query takes a connection too: a transaction is a connect without a query.
    const connect = vi.spyOn(pools[0]!, 'connect')
    try {
      const claim = (dueHint?: boolean) => nodes[0]!.claimDue({ limit: 10, now: NOW, defaultTimeoutMs: 15_000, ...(dueHint ? { dueHint } : {}) })
      const asked = (): number => query.mock.calls.filter(([q]) => q === PG_CLAIM_SQL.hasWork).length
      const transactions = (): number => connect.mock.calls.length - query.mock.calls.length
      expect(await claim()).toEqual([])
      expect([asked(), transactions()]).toEqual([1, 0])
      const made = await enqueueMany(3, () => ({}))
      query.mockClear()
      connect.mockClear()
      expect((await claim(true)).map((d) => d.id).sort()).toEqual([...made].sort())
      expect(await claim(true)).toEqual([])
      expect([asked(), transactions()]).toEqual([0, 2])
    } finally {
      query.mockRestore()
      connect.mockRestore()
    }
  })

  it('never claim the same row twice, and between them claim every row', async () => {
    const made = await enqueueMany(200, () => ({}))
    const seen = new Map<string, string>()
    let claims = 0
    for (let round = 0; round < 20 && seen.size < made.length; round++) {
      for (const rows of await bothClaim(NOW, 7)) {
        if (rows.length > 0) claims++
        for (const c of rows) {
          expect(seen.has(c.id)).toBe(false)
          seen.set(c.id, c.claimToken)
        }
      }
    }
    expect(seen.size).toBe(200)
    // One fresh token per claim: no two claims share one.
    expect(new Set(seen.values()).size).toBe(claims)
    expect(await inFlight()).toBe(200)
  })

  it("hold an endpoint's max_concurrency together, and take the slots again as rows settle", async () => {
    await insertEndpoint('ep_two', { maxConcurrency: 2 })
    await insertEndpoint('ep_wide')
    await enqueueMany(40, (i) => ({ endpointId: i % 4 === 0 ? 'ep_wide' : 'ep_two' }))
    let claimedTwo = 0
    for (let round = 0; round < 40; round++) {
      const got = await bothClaim(NOW + round)
      const two = got.flat().filter((r) => r.endpointId === 'ep_two')
      claimedTwo += two.length
      expect(await inFlight('ep_two')).toBeLessThanOrEqual(2)
      // Each node settles one of what it holds of ep_two, so the slots move between the nodes.
      for (const [i, rows] of got.entries()) {
        const mine = rows.filter((r) => r.endpointId === 'ep_two').slice(0, 1)
        if (mine.length > 0) await nodes[i]!.settle(mine.map((r) => ({ id: r.id, claimToken: r.claimToken, outcome: { kind: 'success' as const } })), NOW + round)
      }
      const held = await f.all<{ id: string; token: string }>(`SELECT id, claim_token AS token FROM deliveries WHERE status = 'in_flight' AND endpoint_id = 'ep_two'`)
      if (round % 3 === 2) await nodes[0]!.settle(held.map((r) => ({ id: r.id, claimToken: r.token, outcome: { kind: 'success' as const } })), NOW + round)
    }
    expect(claimedTwo).toBe(30)
    expect(await f.deliveries.countByStatus()).toMatchObject({ pending: 0 })
  })

  it("reach the other endpoints past one another node's claims saturate", async () => {
    await insertEndpoint('ep_sat', { maxConcurrency: 2 })
    await insertEndpoint('ep_other')
    await enqueueMany(50, () => ({ endpointId: 'ep_sat', nextAttemptAt: NOW - 1000 }))
    expect(await nodes[0]!.claimDue({ limit: 10, now: NOW, defaultTimeoutMs: 15_000 })).toHaveLength(2)
    const others: string[] = []
    for (let i = 0; i < 5; i++) others.push((await f.deliveries.enqueue(row(`o${i}`, NOW, { endpointId: 'ep_other' }), NOW)).id)
    const got = await nodes[1]!.claimDue({ limit: 10, now: NOW, defaultTimeoutMs: 15_000 })
    expect(got.map((r) => r.id)).toEqual(others)
    expect(await inFlight('ep_sat')).toBe(2)
  })

  it("spend an endpoint's rate_limit tokens together: a burst of one second's worth, then the rate", async () => {
    await insertEndpoint('ep_rate', { rateLimit: 5 })
    await enqueueMany(40, () => ({ endpointId: 'ep_rate' }))
    const first = (await bothClaim(NOW)).flat()
    expect(first).toHaveLength(5)
    expect((await bothClaim(NOW + 100)).flat()).toHaveLength(0)
    expect((await bothClaim(NOW + 400)).flat()).toHaveLength(2)
    expect((await bothClaim(NOW + 10_000)).flat()).toHaveLength(5)
    expect(await f.all(`SELECT endpoint_id AS "endpointId", updated_at AS at FROM endpoint_tokens`)).toEqual([{ endpointId: 'ep_rate', at: NOW + 10_000 }])
  })

  it('send one probe between them while the breaker is half-open', async () => {
    await insertEndpoint('ep_probe', { pauseCount: 1, pausedUntil: NOW - 1 })
    await enqueueMany(10, () => ({ endpointId: 'ep_probe' }))
    expect((await bothClaim(NOW)).flat()).toHaveLength(1)
    expect((await bothClaim(NOW + 1)).flat()).toHaveLength(0)
  })

  it('keep ordered keys in order: never two rows of one key in flight', async () => {
    await insertEndpoint('ep_ord', { ordered: true })
    const made = await enqueueMany(30, (i) => ({ endpointId: 'ep_ord', orderingKey: `k${i % 3}` }))
    const done: string[] = []
    for (let round = 0; round < 30 && done.length < made.length; round++) {
      const got = await bothClaim(NOW + round)
      const keys = got.flat().map((r) => r.orderingKey)
      expect(new Set(keys).size).toBe(keys.length)
      const held = await f.all<{ key: string; n: number }>(`SELECT ordering_key AS key, count(*) AS n FROM deliveries WHERE status = 'in_flight' GROUP BY ordering_key`)
      for (const h of held) expect(h.n).toBe(1)
      for (const [i, rows] of got.entries()) {
        await nodes[i]!.settle(rows.map((r) => ({ id: r.id, claimToken: r.claimToken, outcome: { kind: 'success' as const } })), NOW + round)
        done.push(...rows.map((r) => r.id))
      }
    }
    // Per key, the order of delivery is the order of enqueue.
    for (let k = 0; k < 3; k++) expect(done.filter((id) => made.indexOf(id) % 3 === k)).toEqual(made.filter((_, i) => i % 3 === k))
  })

  it("take over a dead node's claims after their lease", async () => {
    await enqueueMany(3, () => ({}))
    const [crashed] = await bothClaim(NOW, 3).then((g) => [g.flat()])
    expect(crashed).toHaveLength(3)
    const lease = Math.max(...crashed!.map((r) => r.leaseUntil))
    expect((await nodes[1]!.claimDue({ limit: 10, now: lease - 1, defaultTimeoutMs: 15_000 }))).toEqual([])
    const again = await nodes[1]!.claimDue({ limit: 10, now: lease, defaultTimeoutMs: 15_000 })
    expect(again.map((r) => r.attempts)).toEqual([2, 2, 2])
  })

  it('a node sweeps expired leases at most every EXPIRE_EVERY_MS of claim time, its transactions sharing the pace', async () => {
    await enqueueMany(2, () => ({}))
    // Each claim in its own transaction, as the dispatcher's settle-and-claim (no idle check first).
    const claimIn = async (pool: pg.Pool, state: PgClaimState, now: number): Promise<number[]> => {
      const c = await pool.connect()
      try {
        await c.query('BEGIN')
        const out = await createPgDeliveriesStore(c, () => {}, state).claimDue({ limit: 1, now, defaultTimeoutMs: 15_000 })
        await c.query('COMMIT')
        return out.map((r) => r.attempts)
      } finally {
        c.release()
      }
    }
    const nodeA = newPgClaimState()
    expect(await claimIn(pools[0]!, nodeA, NOW)).toEqual([1])
    const lease = (await f.all<{ leaseUntil: number }>(`SELECT lease_until AS "leaseUntil" FROM deliveries WHERE status = 'in_flight'`))[0]!.leaseUntil
    expect(await claimIn(pools[0]!, nodeA, lease - 1)).toEqual([1])
    // The first row's lease has ended, but node A swept 1 ms + EXPIRE_EVERY_MS - 2 ago.
    expect(await claimIn(pools[0]!, nodeA, lease + EXPIRE_EVERY_MS - 2)).toEqual([])
    expect(await claimIn(pools[0]!, nodeA, lease + EXPIRE_EVERY_MS - 1)).toEqual([2])
    // Node B's pace is its own: it sweeps the second row's lease as soon as it ends.
    const second = (await f.all<{ leaseUntil: number }>(`SELECT min(lease_until) AS "leaseUntil" FROM deliveries WHERE status = 'in_flight'`))[0]!.leaseUntil
    expect(await claimIn(pools[1]!, newPgClaimState(), second)).toEqual([2])
  })

  it('a row set aside behind its key\'s head while another node finishes the head is released by a later claim', async () => {
    await insertEndpoint('ep_ord', { ordered: true })
    const keyed = (k: string) => row(k, NOW, { endpointId: 'ep_ord', orderingKey: 'k' })
    await nodes[0]!.enqueue(keyed('head'), NOW)
    const [head] = await nodes[0]!.claimDue({ limit: 1, now: NOW, defaultTimeoutMs: 15_000 })
    // Node A enqueues the next row of the key in a transaction that commits after node B's settle
    // of the head: A saw the head in flight and set the row aside; B's trigger could not see the row.
    const a = await pools[0]!.connect()
    let next: string
    try {
      await a.query('BEGIN')
      next = (await createPgDeliveriesStore(a).enqueue(keyed('next'), NOW)).id
      await nodes[1]!.settle([{ id: head!.id, claimToken: head!.claimToken, outcome: { kind: 'success' } }], NOW + 1)
      await a.query('COMMIT')
    } finally {
      a.release()
    }
    expect((await f.deliveries.get(next))!.nextAttemptAt).toBe(WAITING_IN_ORDER)
    // The next claim of any node (its first sweep) finds the row with nothing before it, and takes it.
    const got = await createPgDeliveriesStore(pools[1]!, () => {}, newPgClaimState()).claimDue({ limit: 10, now: NOW + 2, defaultTimeoutMs: 15_000 })
    expect(got.map((r) => r.id)).toEqual([next])
    // A node sweeps at most every RELEASE_EVERY_MS of claim time.
    const state = newPgClaimState()
    const store = createPgDeliveriesStore(pools[0]!, () => {}, state)
    expect(await store.claimDue({ limit: 10, now: NOW + 3, defaultTimeoutMs: 15_000 })).toEqual([])
    await nodes[0]!.enqueue(keyed('late'), NOW)
    await nodes[1]!.settle([{ id: got[0]!.id, claimToken: got[0]!.claimToken, outcome: { kind: 'success' } }], NOW + 3)
    // Left waiting as the race above leaves a row (the trigger released it: set it aside again).
    await f.exec(`UPDATE deliveries SET next_attempt_at = ? WHERE status = 'pending'`, [WAITING_IN_ORDER])
    expect(await store.claimDue({ limit: 10, now: NOW + 3 + RELEASE_EVERY_MS - 1, defaultTimeoutMs: 15_000 })).toEqual([])
    expect((await store.claimDue({ limit: 10, now: NOW + 3 + RELEASE_EVERY_MS, defaultTimeoutMs: 15_000 })).map((r) => r.recipient)).toEqual(['late'])
  })

  it('enqueue the same delivery at once: one row, both answer with its id', async () => {
    for (let i = 0; i < 5; i++) {
      const out = await Promise.all(nodes.map((n) => n.enqueue(row(`same${i}`, NOW), NOW)))
      expect(out[0]!.id).toBe(out[1]!.id)
      expect(out.filter((o) => o.created)).toHaveLength(1)
    }
    expect(await f.deliveries.queueDepth()).toEqual({ pending: 5, in_flight: 0 })
  })

  it('lock endpoints by a stable 32-bit key', () => {
    expect(endpointLockKey('ep_a')).toBe(endpointLockKey('ep_a'))
    expect(endpointLockKey('ep_a')).not.toBe(endpointLockKey('ep_b'))
    expect(Number.isInteger(endpointLockKey('ep_x')) && Math.abs(endpointLockKey('ep_x')) < 2 ** 31).toBe(true)
  })
})
