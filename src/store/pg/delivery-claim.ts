/**
 * The claim side of the delivery queue on PostgreSQL (DESIGN.md "The claim protocol"; the SQLite
 * claimer is src/store/sqlite/delivery-claim.ts): expire dead leases, pick due rows, end exhausted rows
 * and rows of a deleted or disabled endpoint, and claim the rest with a fresh token and lease.
 *
 * Many nodes claim from one database (docs/operations.md), so what one node's memory knows is not enough.
 * The choice, per claim, in one transaction:
 * 1. Candidates are picked as SQLite's claimer picks them (`pick` below: the due queue in order
 *    until a key has no room, then turns by key from deliveries_endpoint_due), with the caller's
 *    `capacity` and `excludeEndpoints` (this node's view: its own in-flight rows, its breaker
 *    probe, channel and origin limits), and SQLite's rules in SQL (a paused endpoint's rows and
 *    rows behind the ordering barrier are passed over). Every read is `FOR UPDATE SKIP LOCKED`
 *    over a window only a little larger than the rows still wanted, so two nodes claiming at
 *    once read different rows instead of racing for the same head of the queue. Unlike SQLite,
 *    the second path is never skipped for QUIET_MS (it is bounded by PG_PASS_KEYS keys instead).
 * 2. As the pick meets an endpoint (in a window, or among the keys of the second path), the claim
 *    tries its transaction-level advisory lock (`pg_try_advisory_xact_lock(ENDPOINT_LOCK_SPACE,
 *    hash(id))`, held to commit). Taken: a new statement (READ COMMITTED: a new snapshot, so every
 *    other node's committed claims are seen) counts the endpoint's rows in flight against
 *    `max_concurrency` (1 while the breaker is half-open, pause_count > 0) and reads its token
 *    bucket from `endpoint_tokens` (`rate_limit` per second, a burst of one second's worth, at
 *    least 1, as delivery/rate-limit.ts); the pick then gives the endpoint the lesser of that and
 *    the caller's capacity. Not taken (another node is claiming it now): the endpoint has no room
 *    in this claim, which goes on to the other keys. A try never waits, so claims neither queue
 *    behind each other nor deadlock, and one saturated endpoint never holds back another node's
 *    claims of the others. Advisory rather than a row lock on `endpoints`: settles update that
 *    row on every outcome (health counters), and must not queue behind claims.
 * 3. The picks are claimed by `UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED)`, which
 *    re-checks status and the barrier, and the tokens the claimed rows spent are written back
 *    before commit releases the locks.
 * So `max_concurrency`, `rate_limit`, the half-open probe and ordering hold across all nodes
 * together; the per-channel (`#inbox`, `#email`) and per-origin (`@…`) slots stay each node's.
 * Leases work as on SQLite: a node killed with -9 leaves rows in flight until their lease ends,
 * then any node's next claim makes them pending again (the attempt stays spent). A node sweeps
 * expired leases at most once per EXPIRE_EVERY_MS of claim time (`PgClaimState`, shared by the
 * store's transactions), not before every claim: a lease is at least 15 s, so a row comes back
 * at most that much later, and a busy dispatcher's claim cycle saves a statement.
 */
import pg from 'pg'
import type { Async } from '../contract.js'
import { leaseMarginOf, newClaimToken, type ClaimedDelivery, type ClaimOptions, type DeliveriesStore, type DeliveryStatus } from '../deliveries.js'
import type { PgQueryable } from './queryable.js'
import { atomically } from './atomic.js'
import { MAX_WINDOWS, PG_CLAIM_SQL, PG_PASS_KEYS, TURN_PAGE, WINDOW_MAX, WINDOW_SLACK } from './delivery-claim-sql.js'

/** A claim sweeps expired leases when the last sweep of its store was at least this long before (in claim time). */
export const EXPIRE_EVERY_MS = 250

/**
 * A claim releases rows left waiting for their ordering key's turn with nothing before them when
 * the last such sweep of its store was at least this long before (in claim time). On several
 * nodes a row can be set aside behind its key's head while another node finishes that head: the
 * finishing node's trigger cannot see the row until its insert commits, so nothing releases it.
 * The sweep does (docs/known-limits.md, "Ordered keys on several nodes").
 */
export const RELEASE_EVERY_MS = 2_000

/** What one store's claims share across its transactions (each builds its families anew). */
export interface PgClaimState {
  /** The claim time (`opts.now`) of the last lease sweep; NaN before the first. */
  expiredAt: number
  /** The claim time of the last sweep of rows waiting in order with nothing before them; NaN before the first. */
  releasedAt: number
}

/** A store's claim state before its first claim. */
export const newPgClaimState = (): PgClaimState => ({ expiredAt: Number.NaN, releasedAt: Number.NaN })

/** Runs `fn` in one transaction (see `atomically`): on a pool a new one, on a transaction's client inside it. */
export const inPgTransaction = atomically

/** True when `q` is a pool (each statement its own transaction), not a transaction's client. */
export const isPool = (q: PgQueryable): boolean => q instanceof pg.Pool

/** A 32-bit FNV-1a hash of an endpoint id: the second key of its advisory lock (collisions only serialise more). */
export function endpointLockKey(id: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h | 0
}

type Candidate = { id: string; key: string; exhausted: boolean; nextAttemptAt: number; gone: boolean }
type ClaimedRow = Omit<ClaimedDelivery, 'status' | 'updatedAt' | 'completedAt'>

/** The candidates' order: next_attempt_at, then id (bytewise, as COLLATE "C"). */
const byDueThenId = (a: ClaimedDelivery, b: ClaimedDelivery): number =>
  a.nextAttemptAt - b.nextAttemptAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** The claim functions of the PostgreSQL delivery family over `q`; `onDue` as in createPgDeliveriesStore. */
export function createPgClaimer(
  q: PgQueryable,
  onDue: () => void,
  state: PgClaimState = newPgClaimState(),
): Pick<Async<DeliveriesStore>, 'claimDue' | 'releaseWaitingInOrder'> {
  const S = PG_CLAIM_SQL

  // Where the second path stopped last time, so successive claims take turns (round robin).
  let lastServed = ''

  /**
   * Picks up to `limit` rows (the file's comment, step 1), as SQLite's claimer does: the first
   * path reads the due queue in order while every row it meets can be taken. At the first row
   * whose key has no free slot (saturated, excluded, rate-limited), or after `4 × limit` rows (min
   * 256), it hands over to the second path: the keys with due rows, in turns that continue from
   * the previous claim, each giving its own due rows from deliveries_endpoint_due. So a backlog on
   * one key is never read past, and never delays the others (docs/delivery.md isolation).
   */
  const pick = async (c: PgQueryable, opts: ClaimOptions) => {
    const { now, limit, capacity } = opts
    const exclude = new Set(opts.excludeEndpoints ?? [])
    const taken = new Map<string, number>()
    const chosen: Candidate[] = []
    const exhausted: string[] = []
    const gone: string[] = []
    const shared = new Map<string, number>()
    const buckets = new Map<string, { tokens: number; at: number }>()
    const picked = { chosen, exhausted, gone, buckets }
    const room = (key: string): number => {
      if (exclude.has(key)) return 0
      const free = Math.min(capacity ? capacity(key) : Infinity, shared.get(key) ?? Infinity) - (taken.get(key) ?? 0)
      if (free <= 0) exclude.add(key)
      return free
    }
    // Step 2 as the pick meets endpoints: the slots and tokens every node's claims leave them.
    const learn = async (keys: Iterable<string>): Promise<void> => {
      const fresh = [...new Set(keys)].filter((k) => !k.startsWith('#') && !k.startsWith('@') && !shared.has(k) && !exclude.has(k))
      if (fresh.length === 0) return
      const { rows: locks } = await c.query<{ id: string; ok: boolean }>(S.tryLock, [fresh, fresh.map(endpointLockKey)])
      const mine = locks.filter((l) => l.ok).map((l) => l.id)
      for (const l of locks) if (!l.ok) shared.set(l.id, 0)
      for (const k of mine) shared.set(k, Infinity)
      if (mine.length === 0) return
      // A new statement, after the locks: READ COMMITTED reads every other node's committed claims.
      const { rows } = await c.query<{ id: string; free: number; rate: number | null; tokens: number | null; tokensAt: number | null }>(S.endpointRoom, [mine])
      for (const r of rows) {
        let n = Math.max(0, r.free)
        if (r.rate !== null && r.rate > 0) {
          const burst = Math.max(1, r.rate)
          const tokens = r.tokens === null ? burst : Math.min(burst, r.tokens + (Math.max(0, now - r.tokensAt!) / 1000) * r.rate)
          buckets.set(r.id, { tokens, at: r.tokensAt === null ? now : Math.max(now, r.tokensAt) })
          n = Math.min(n, Math.max(0, Math.floor(tokens)))
        }
        shared.set(r.id, n)
      }
    }
    // Takes the row if it can; false when its key has no room left. Rows to end are collected.
    const take = (r: Candidate): boolean => {
      if (r.gone) gone.push(r.id)
      else if (r.exhausted) exhausted.push(r.id)
      else if (room(r.key) <= 0) return false
      else {
        chosen.push(r)
        taken.set(r.key, (taken.get(r.key) ?? 0) + 1)
      }
      return true
    }

    // The first path. The position after the last row it took or passed bounds the second.
    let afterAt = Number.MIN_SAFE_INTEGER
    let afterId = ''
    const budget = Math.max(limit * 4, 256)
    let read = 0
    first: for (let w = 0; ; w++) {
      if (w === MAX_WINDOWS) break
      const size = Math.min(WINDOW_MAX, limit - chosen.length + WINDOW_SLACK)
      const { rows } = await c.query<Candidate>(S.window, [now, afterAt, afterId, size])
      await learn(rows.filter((r) => !r.gone && !r.exhausted).map((r) => r.key))
      for (const r of rows) {
        if (!take(r)) break first
        afterAt = r.nextAttemptAt
        afterId = r.id
        if (chosen.length >= limit) return picked
        if (++read >= budget) break first
      }
      if (rows.length < size) return picked
    }

    // The second path: key by key from where the previous claim stopped, once round the ring.
    const start = lastServed
    const served = new Set<string>()
    let looked = 0
    let crossed = false
    for (let after = start; ; ) {
      const { rows: keys } = await c.query<{ key: string; due: boolean }>(S.dueKeys, [now, after])
      await learn(keys.filter((k) => k.due && !served.has(k.key)).map((k) => k.key))
      const batch: { key: string; want: number }[] = []
      let wanted = limit - chosen.length
      let round = false
      let cut = false
      let last = after
      for (const k of keys) {
        if (crossed && k.key > start) {
          round = true
          break
        }
        last = k.key
        if (k.due && !served.has(k.key)) {
          served.add(k.key)
          const want = Math.min(wanted, room(k.key))
          if (want > 0) {
            batch.push({ key: k.key, want })
            wanted -= want
          }
        }
        if (++looked >= PG_PASS_KEYS) {
          cut = true
          break
        }
        if (wanted <= 0) break
      }
      if (batch.length > 0) {
        const { rows } = await c.query<Candidate>(S.ofKeys, [now, afterAt, afterId, batch.map((b) => b.key), batch.map((b) => b.want)])
        for (const r of rows) if (chosen.length < limit) take(r)
      }
      if (chosen.length >= limit) {
        lastServed = last
        return picked
      }
      if (cut) {
        lastServed = last
        opts.onCutShort?.()
        return picked
      }
      if (round) return picked
      if (wanted <= 0 || keys.length === TURN_PAGE) after = last
      else if (crossed) return picked
      else {
        crossed = true
        after = ''
      }
    }
  }

  /** Step 3: the picks claimed, and the tokens they spent written back. */
  const claimPicked = async (
    c: PgQueryable,
    allowed: Candidate[],
    buckets: ReadonlyMap<string, { tokens: number; at: number }>,
    opts: ClaimOptions,
  ): Promise<ClaimedDelivery[]> => {
    const { now } = opts
    if (allowed.length === 0) return []
    const ids = allowed.map((r) => r.id)
    // One fresh token per claim, as on SQLite (docs/delivery.md, "The queue").
    const token = newClaimToken(opts)
    const margin = leaseMarginOf(opts)
    const { rows } = await c.query<ClaimedRow>(S.claim, [ids, token, now, margin, opts.defaultTimeoutMs, JSON.stringify(opts.channelTimeoutsMs ?? {})])
    if (buckets.size > 0) {
      const spent = new Map<string, number>()
      for (const r of rows) if (r.endpointId !== null && buckets.has(r.endpointId)) spent.set(r.endpointId, (spent.get(r.endpointId) ?? 0) + 1)
      const save = [...spent].map(([id, n]) => ({ id, tokens: buckets.get(id)!.tokens - n, at: buckets.get(id)!.at }))
      if (save.length > 0) await c.query(S.saveTokens, [save.map((s) => s.id), save.map((s) => s.tokens), save.map((s) => s.at)])
    }
    // RETURNING order is unspecified; keep the candidates' order (due time, then id).
    return rows.map((r): ClaimedDelivery => ({ ...r, status: 'in_flight', updatedAt: now, completedAt: null })).sort(byDueThenId)
  }

  const madeDue = (n: number): number => {
    if (n > 0) onDue()
    return n
  }

  return {
    async claimDue(opts) {
      // Before the idle check: a row left waiting by the race above is not due until released.
      if (!(opts.now >= state.releasedAt && opts.now - state.releasedAt < RELEASE_EVERY_MS)) {
        state.releasedAt = opts.now
        await q.query(S.releaseWaiting, [opts.now])
      }
      // An idle node's poll costs one read, no transaction (skipped when told rows were made due).
      if (isPool(q) && opts.limit > 0 && opts.dueHint !== true && !(await q.query<{ work: boolean }>(S.hasWork, [opts.now])).rows[0]!.work) return []
      return inPgTransaction(q, async (c) => {
        const { now, limit } = opts
        // A clock that went back (an injected one, a repaired one) sweeps at once.
        if (!(now >= state.expiredAt && now - state.expiredAt < EXPIRE_EVERY_MS)) {
          await c.query(S.logPullExpired, [now])
          await c.query(S.expireLeases, [now])
          state.expiredAt = now
        }
        if (limit <= 0) return []
        const { chosen, exhausted, gone, buckets } = await pick(c, opts)
        if (exhausted.length > 0) await c.query(S.markExhausted, [exhausted, now])
        if (gone.length > 0) await c.query(S.finishGone, [now, now, gone])
        if (chosen.length === 0) return []
        return claimPicked(c, chosen, buckets, opts)
      })
    },
    releaseWaitingInOrder: async (now) => madeDue((await q.query(S.releaseWaiting, [now])).rowCount ?? 0),
  }
}

/** The statuses `byStatus` fills in, each zero when absent. */
export function byStatus(rows: readonly { status: DeliveryStatus; n: number }[]): Record<DeliveryStatus, number> {
  const out: Record<DeliveryStatus, number> = { pending: 0, in_flight: 0, success: 0, dead: 0, cancelled: 0 }
  for (const r of rows) out[r.status] = r.n
  return out
}
