/**
 * The claim side of the delivery queue on PostgreSQL (DESIGN.md "The claim protocol"; the SQLite
 * claimer is src/store/delivery-claim.ts): expire dead leases, pick due rows, end exhausted rows
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
import { leaseMarginOf, newClaimToken } from '../delivery-claim.js'
import { WAITING_IN_ORDER, type ClaimedDelivery, type ClaimOptions, type DeliveriesStore, type DeliveryStatus } from '../delivery-types.js'
import { DELIVERY_COLUMNS } from './delivery-list.js'
import type { PgQueryable } from './queryable.js'
import { atomically } from './atomic.js'

/** The first key of every advisory lock a claim takes on an endpoint (the second is a hash of its id). */
export const ENDPOINT_LOCK_SPACE = 0x5062_0001

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

/** At most this many candidate rows one statement reads. */
const WINDOW_MAX = 4096
/** At most this many windows the first path of one claim reads. */
const MAX_WINDOWS = 16
/** Rows a window reads beyond the rows still wanted (some may be ended instead of claimed). */
const WINDOW_SLACK = 16
/** Keys with pending rows the second path looks up per statement. */
const TURN_PAGE = 32
/**
 * At most this many keys with pending rows one claim's second path looks at; the next claim goes
 * on from there (SQLite's PASS_ENDPOINTS).
 */
export const PG_PASS_KEYS = 256

/** SQL: the key whose slots and turns a row of `deliveries ${t}` takes (SQLite's DUE_KEY). */
export const PG_DUE_KEY = (t = ''): string => `coalesce(${t}endpoint_id, ${t}target_key, '#' || ${t}channel)`

/** SQL (over `deliveries`): an older unfinished row of its endpoint and ordering key exists. */
export const PG_HAS_OLDER_IN_KEY = `EXISTS (SELECT 1 FROM deliveries o
      WHERE o.endpoint_id = deliveries.endpoint_id AND o.ordering_key = deliveries.ordering_key
        AND o.status IN ('pending', 'in_flight') AND o.id < deliveries.id)`

/** SQL (over `deliveries`): the pending row must wait for its ordering key's turn (SQLite's WAITS_IN_ORDER). */
export const PG_WAITS_IN_ORDER = `(ordering_key IS NOT NULL AND (SELECT ordered FROM endpoints WHERE id = deliveries.endpoint_id) = 1
      AND ${PG_HAS_OLDER_IN_KEY})`

/** SQL over `deliveries d` and `endpoints e`: the row is held back (a pause, or the ordering barrier); $1 is now. */
const BLOCKED = `((e.paused_until IS NOT NULL AND e.paused_until > $1) OR (d.ordering_key IS NOT NULL AND e.ordered = 1 AND EXISTS (
           SELECT 1 FROM deliveries o
            WHERE o.endpoint_id = d.endpoint_id AND o.ordering_key = d.ordering_key AND o.status IN ('pending', 'in_flight')
              AND ((o.status = 'pending' AND o.id < d.id) OR (o.status = 'in_flight' AND o.id <> d.id)))))`

const EXPIRE_SET = `SET status = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'pending' END,
          last_error = CASE WHEN attempts >= max_attempts THEN 'lease_expired' ELSE last_error END,
          completed_at = CASE WHEN attempts >= max_attempts THEN $1::bigint ELSE NULL END,
          claim_token = NULL, lease_until = NULL, next_attempt_at = $1, updated_at = $1`

/**
 * Ends pending rows ($3: ids) whose endpoint is deleted (cancelled) or disabled (dead), as the
 * SQLite FINISH_IF_ENDPOINT_GONE; $1 completed_at, $2 updated_at. Returns each ended row's status.
 */
export const PG_FINISH_IF_ENDPOINT_GONE = `UPDATE deliveries d
      SET status = CASE WHEN e.deleted_at IS NOT NULL THEN 'cancelled' ELSE 'dead' END,
          last_error = CASE WHEN e.deleted_at IS NOT NULL THEN 'endpoint_deleted' ELSE 'endpoint_disabled' END,
          claim_token = NULL, completed_at = $1, updated_at = $2
    FROM endpoints e
    WHERE d.id = ANY($3::text[]) AND d.status = 'pending'
      AND e.id = d.endpoint_id AND (e.deleted_at IS NOT NULL OR e.disabled = 1)
    RETURNING d.status`

const CLAIM_COLUMNS = DELIVERY_COLUMNS.replace(/(^|,\s*)([a-z_]+)/g, '$1d.$2')

/** The claim's statements by name. */
export const PG_CLAIM_SQL = {
  hasWork: `SELECT (EXISTS (SELECT 1 FROM deliveries WHERE status = 'pending' AND next_attempt_at <= $1)
      OR EXISTS (SELECT 1 FROM deliveries WHERE status = 'in_flight' AND lease_until <= $1)) AS work`,
  // SKIP LOCKED: two nodes expiring at once never wait on each other's rows.
  expireLeases: `UPDATE deliveries ${EXPIRE_SET}
    WHERE id IN (SELECT id FROM deliveries WHERE status = 'in_flight' AND lease_until <= $1 FOR UPDATE SKIP LOCKED)`,
  // The first path: due rows in order. $1 now, $2/$3 the position after the previous window, $4 the window size.
  window: `SELECT d.id, ${PG_DUE_KEY('d.')} AS key, (d.attempts >= d.max_attempts) AS exhausted,
      d.next_attempt_at AS "nextAttemptAt", coalesce(e.deleted_at IS NOT NULL OR e.disabled = 1, false) AS gone
    FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id
    WHERE d.status = 'pending' AND d.next_attempt_at <= $1 AND (d.next_attempt_at, d.id) > ($2::bigint, $3::text)
      AND (e.id IS NULL OR e.disabled = 1 OR e.deleted_at IS NOT NULL OR NOT ${BLOCKED})
    ORDER BY d.next_attempt_at, d.id
    LIMIT $4
    FOR UPDATE OF d SKIP LOCKED`,
  // Up to TURN_PAGE keys with pending rows after $2 in key order, each with whether its earliest
  // pending row is due at $1: a skip-scan of deliveries_endpoint_due, one probe per key.
  dueKeys: `WITH RECURSIVE k(key, n) AS (
      SELECT (SELECT ${PG_DUE_KEY()} FROM deliveries WHERE status = 'pending' AND ${PG_DUE_KEY()} > $2::text ORDER BY ${PG_DUE_KEY()} LIMIT 1), 1
      UNION ALL
      SELECT (SELECT ${PG_DUE_KEY()} FROM deliveries WHERE status = 'pending' AND ${PG_DUE_KEY()} > k.key ORDER BY ${PG_DUE_KEY()} LIMIT 1), k.n + 1
        FROM k WHERE k.key IS NOT NULL AND k.n < ${TURN_PAGE})
    SELECT key, (SELECT min(next_attempt_at) FROM deliveries WHERE status = 'pending' AND ${PG_DUE_KEY()} = k.key) <= $1 AS due
      FROM k WHERE key IS NOT NULL`,
  // The second path: up to $5[i] due rows of each key $4[i] after the first path's position ($2, $3), from deliveries_endpoint_due.
  ofKeys: `SELECT r.* FROM unnest($4::text[], $5::integer[]) WITH ORDINALITY AS k(key, want, n)
    CROSS JOIN LATERAL (
      SELECT d.id, ${PG_DUE_KEY('d.')} AS key, (d.attempts >= d.max_attempts) AS exhausted, d.next_attempt_at AS "nextAttemptAt",
          coalesce(e.deleted_at IS NOT NULL OR e.disabled = 1, false) AS gone
        FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id
        WHERE d.status = 'pending' AND ${PG_DUE_KEY('d.')} = k.key AND d.next_attempt_at <= $1
          AND (d.next_attempt_at, d.id) > ($2::bigint, $3::text)
          AND (e.id IS NULL OR e.disabled = 1 OR e.deleted_at IS NOT NULL OR NOT ${BLOCKED})
        ORDER BY d.next_attempt_at, d.id
        LIMIT k.want
        FOR UPDATE OF d SKIP LOCKED) r
    ORDER BY k.n, r."nextAttemptAt", r.id`,
  markExhausted: `UPDATE deliveries SET status = 'dead', last_error = COALESCE(last_error, 'attempts_exhausted'),
      claim_token = NULL, completed_at = $2, updated_at = $2
    WHERE id = ANY($1::text[]) AND status = 'pending'`,
  finishGone: PG_FINISH_IF_ENDPOINT_GONE,
  // Never waits: an endpoint another node is claiming right now is skipped by this claim, so two
  // claims never wait on each other (nor deadlock, whatever order they meet endpoints in).
  tryLock: `SELECT t.id, pg_try_advisory_xact_lock(${ENDPOINT_LOCK_SPACE}, t.k) AS ok FROM unnest($1::text[], $2::integer[]) AS t(id, k)`,
  // Under the locks: each endpoint's free slots across all nodes and its bucket.
  endpointRoom: `SELECT e.id, (CASE WHEN e.pause_count > 0 THEN 1 ELSE e.max_concurrency END)
        - (SELECT count(*) FROM deliveries d WHERE d.endpoint_id = e.id AND d.status = 'in_flight') AS free,
      e.rate_limit AS rate, t.tokens, t.updated_at AS "tokensAt"
    FROM endpoints e LEFT JOIN endpoint_tokens t ON t.endpoint_id = e.id
    WHERE e.id = ANY($1::text[])`,
  // $1 ids, $2 the claim's token, $3 now, $4 lease margin, $5 default timeout, $6 timeouts by channel (JSON).
  claim: `WITH c AS (SELECT t.id FROM unnest($1::text[]) AS t(id)),
      l AS (SELECT d.id FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id
             WHERE d.id IN (SELECT id FROM c) AND d.status = 'pending' AND (e.id IS NULL OR NOT ${BLOCKED.replaceAll('$1', '$3')})
             FOR UPDATE OF d SKIP LOCKED)
    UPDATE deliveries d
      SET status = 'in_flight', claim_token = $2::text, attempts = d.attempts + 1, updated_at = $3,
          lease_until = $3 + $4 + COALESCE((SELECT timeout_ms FROM endpoints WHERE id = d.endpoint_id),
            CASE WHEN d.target_key IS NOT NULL THEN (SELECT timeout_ms FROM requests WHERE delivery_id = d.id) END,
            ($6::jsonb ->> d.channel)::bigint, $5)
    FROM c
    WHERE d.id = c.id AND d.id IN (SELECT id FROM l)
    RETURNING ${CLAIM_COLUMNS}, (SELECT body FROM events WHERE id = d.event_id) AS "eventBody"`,
  saveTokens: `INSERT INTO endpoint_tokens (endpoint_id, tokens, updated_at)
      SELECT * FROM unnest($1::text[], $2::double precision[], $3::bigint[])
    ON CONFLICT (endpoint_id) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at`,
  releaseWaiting: `UPDATE deliveries SET next_attempt_at = $1
    WHERE status = 'pending' AND next_attempt_at = ${WAITING_IN_ORDER}
      AND (endpoint_id NOT IN (SELECT id FROM endpoints WHERE ordered = 1) OR NOT ${PG_HAS_OLDER_IN_KEY})`,
} as const

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
