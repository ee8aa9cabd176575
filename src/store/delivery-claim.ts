/**
 * The claim side of the delivery queue (DESIGN.md "The claim protocol"): expire dead leases,
 * pick due rows, move exhausted ones to dead, and claim the rest with a fresh token and lease.
 * Used by createDeliveriesStore; import the types and functions from './deliveries.js'.
 */
import { randomBytes } from 'node:crypto'
import { multiRow, prepareAll, tuples, type Db } from './db.js'
import { WAITING_IN_ORDER, type Channel, type ClaimedDelivery, type ClaimOptions, type DeliveriesStore } from './delivery-types.js'

/** The lease margin: a request is never re-claimed while in flight (docs/delivery.md, >= 15 s). */
export const LEASE_MARGIN_MS = 30_000

/** The lease margin a claim uses: its `leaseMarginMs` (LEASE_MARGIN_MS when absent), never under 15 s. */
export const leaseMarginOf = (opts: Pick<ClaimOptions, 'leaseMarginMs'>): number => Math.max(opts.leaseMarginMs ?? LEASE_MARGIN_MS, 15_000)

/** A claim's fresh token, one for all its rows (docs/delivery.md, "The queue"): the owner, then 24 random hex digits. */
export const newClaimToken = (opts: Pick<ClaimOptions, 'owner'>): string => (opts.owner ?? '') + randomBytes(12).toString('hex')

// Limits are literals, and the claim stops stepping through rows when it has enough: SQLite
// (built with STAT4) re-prepares a statement on every run when its LIMIT is a bound parameter,
// which measured 7-25 µs per statement.
/** At most this many rows one claim statement can step through. */
const WINDOW_MAX = 4096
/** How many endpoints with pending rows the second path of a claim looks at per statement. */
const TURN_PAGE = 32
/**
 * At most this many endpoints with pending rows one claim's second path looks at (~2 µs each);
 * the next claim goes on from there. So with thousands of endpoints holding scheduled retries a
 * claim costs at most ~0.7 ms, and an endpoint far round the ring waits a few claims more.
 */
export const PASS_ENDPOINTS = 256

// A row of a deleted or disabled endpoint comes back flagged `gone` and is finished
// (FINISH_IF_ENDPOINT_GONE) rather than claimed: such a row can only be pending through a race
// with the delete or disable, and nothing would ever claim it. `blocked` hides a row of a paused
// endpoint (an outage must not burn attempts), and a row behind the ordering barrier: an older
// pending row, or any in-flight one (a redelivered or recovered older row can be pending behind a
// newer one in flight), with the same endpoint + ordering key on an ordered endpoint. The
// `o.status IN (…)` term repeats the partial index's condition so SQLite can use
// deliveries_order_barrier; without it the check read every delivery the endpoint ever had.
/**
 * Whose slots a pending row takes, and whose turn it waits for: its endpoint, the origin of a
 * request (target_key, `@<origin>`), or `#<channel>` for the other rows without an endpoint
 * (inbox, email, notify-webhook), so a slow mail server holds only email rows back and a dead
 * host only its own requests. The expression of deliveries_endpoint_due: a statement must spell
 * it the same way for SQLite to use that index.
 */
export const DUE_KEY = (t = ''): string => `coalesce(${t}endpoint_id, ${t}target_key, '#' || ${t}channel)`

/** DUE_KEY of a row in code: its endpoint, its request origin, or `#<channel>`. */
export const dueKey = (row: { endpointId?: string | null; targetKey?: string | null; channel: string }): string =>
  row.endpointId ?? row.targetKey ?? channelKey(row.channel)

/** The key under which the requests to one origin take slots and turns (a row's target_key). */
export const originKey = (origin: string): string => `@${origin}`

/** The key under which a channel's rows without an endpoint take slots and turns. */
export const channelKey = (channel: string): string => `#${channel}`

// The lease a claim at @now gives candidate d (joined to its endpoint e): its request timeout (the
// endpoint's, a durable request's own, its channel's in @channelTimeouts, or @defaultTimeout) plus
// @margin. The candidates read it and the claim writes what they read (CLAIM_ROWS), in one
// transaction, so the two agree.
const LEASE_UNTIL = `@now + @margin + COALESCE(e.timeout_ms,
      CASE WHEN d.target_key IS NOT NULL THEN (SELECT timeout_ms FROM requests WHERE delivery_id = d.id) END,
      json_extract(@channelTimeouts, '$."' || d.channel || '"'), @defaultTimeout)`

// The columns of the deliveries the claim rarely finds set (notification rows, retries, ordered
// rows): one JSON array when any is set, else NULL. better-sqlite3 measured ~0.12 µs per column
// per row, NULLs included, and a first webhook attempt has all six unset.
const RARE = ['notification_id', 'recipient', 'ordering_key', 'group_key', 'last_status_code', 'last_error'].map((c) => `d.${c}`)
const RARE_COLUMNS = `CASE WHEN coalesce(${RARE.join(', ')}) IS NULL THEN NULL ELSE json_array(${RARE.join(', ')}) END`

/**
 * A candidate row: where the claim finds it, what it would do with it (`state`, see STATE) and
 * everything a claim returns, read once: the claim's UPDATE returns nothing (measured: RETURNING,
 * or reading the rows back, cost 1-3 µs per row more). `state` is 0 for a claimable row, else why
 * not: the endpoint is gone (deleted or disabled), the row is blocked, or its attempts are spent.
 */
const candidateColumns = (state: string): string => `d.rowid, d.id, d.next_attempt_at, ${state},
      d.channel, d.event_id, d.endpoint_id, d.event_type, d.attempts, d.max_attempts, ${LEASE_UNTIL}, d.created_at,
      (SELECT body FROM events WHERE id = d.event_id), d.app_id, d.payload, d.target_key, ${RARE_COLUMNS}`
/** Why a candidate is not claimed (its `state`); 0 when it is. */
const STATE = { exhausted: 1, gone: 2, blocked: 3 } as const
const GONE = '(e.deleted_at IS NOT NULL OR e.disabled = 1)'
const stateOf = (blocked: string): string =>
  `CASE WHEN ${GONE} THEN ${STATE.gone} WHEN ${blocked} THEN ${STATE.blocked} WHEN d.attempts >= d.max_attempts THEN ${STATE.exhausted} ELSE 0 END`
const BLOCKED = `((e.paused_until IS NOT NULL AND e.paused_until > @now) OR (d.ordering_key IS NOT NULL AND e.ordered IS 1 AND EXISTS (
           SELECT 1 FROM deliveries o
            WHERE o.endpoint_id = d.endpoint_id AND o.ordering_key = d.ordering_key AND o.status IN ('pending', 'in_flight')
              AND ((o.status = 'pending' AND o.id < d.id) OR (o.status = 'in_flight' AND o.id <> d.id)))))`

// The first path: due rows in (next_attempt_at, id) order, from the covering
// index deliveries_due, each with its flags. The caller steps through them and stops as soon as
// it has enough: the subquery is a co-routine, so rows not stepped to are never read. CROSS JOIN
// keeps it the outer loop, so rows come out in its order without a sort.
const WINDOW = `SELECT ${candidateColumns(stateOf(BLOCKED))}
    FROM (SELECT rowid AS r FROM deliveries INDEXED BY deliveries_due
           WHERE status = 'pending' AND next_attempt_at <= @now
           ORDER BY next_attempt_at, id LIMIT ${WINDOW_MAX}) w
    CROSS JOIN deliveries d ON d.rowid = w.r LEFT JOIN endpoints e ON e.id = d.endpoint_id`

// The second path: the claimable due rows of one key (an endpoint, or `#<channel>` for the rows
// without one), after the first path's last row, from deliveries_endpoint_due.
const OF_KEY = `SELECT ${candidateColumns(stateOf('0'))}
    FROM deliveries d INDEXED BY deliveries_endpoint_due LEFT JOIN endpoints e ON e.id = d.endpoint_id
    WHERE d.status = 'pending' AND ${DUE_KEY('d.')} = @key AND d.next_attempt_at <= @now
      AND (d.next_attempt_at, d.id) > (@afterAt, @afterId)
      AND (e.id IS NULL OR e.disabled = 1 OR e.deleted_at IS NOT NULL OR NOT ${BLOCKED})
    ORDER BY d.next_attempt_at, d.id
    LIMIT ${WINDOW_MAX}`

// Up to TURN_PAGE keys with pending rows that sort after @after (the `#<channel>` keys before
// every endpoint id), in order, each with whether its earliest pending row is due: a skip-scan of
// deliveries_endpoint_due, one seek per key and one more for its earliest row.
const DUE_ENDPOINTS = `WITH RECURSIVE ep(id, n) AS (
      SELECT (SELECT ${DUE_KEY()} FROM deliveries INDEXED BY deliveries_endpoint_due
               WHERE status = 'pending' AND ${DUE_KEY()} > @after ORDER BY ${DUE_KEY()} LIMIT 1), 1
      UNION ALL
      SELECT (SELECT ${DUE_KEY()} FROM deliveries INDEXED BY deliveries_endpoint_due
               WHERE status = 'pending' AND ${DUE_KEY()} > ep.id ORDER BY ${DUE_KEY()} LIMIT 1), ep.n + 1
        FROM ep WHERE ep.id IS NOT NULL AND ep.n < ${TURN_PAGE})
    SELECT id, (SELECT min(next_attempt_at) FROM deliveries INDEXED BY deliveries_endpoint_due
                 WHERE status = 'pending' AND ${DUE_KEY()} = ep.id) <= @now AS due
      FROM ep WHERE id IS NOT NULL`

// A lease that ran out means the worker died: the attempt stays spent (the request may have
// gone out), so a row with no attempts left is dead rather than pending.
const EXPIRE_CLAIM = `UPDATE deliveries
      SET status = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'pending' END,
          last_error = CASE WHEN attempts >= max_attempts THEN 'lease_expired' ELSE last_error END,
          completed_at = CASE WHEN attempts >= max_attempts THEN @now ELSE NULL END,
          claim_token = NULL, lease_until = NULL, next_attempt_at = @now, updated_at = @now`

/**
 * True while the `deliveries` row has an older unfinished row with its endpoint and ordering key
 * (SQL, for a statement over `deliveries`): what makes a row wait on an ordered endpoint.
 */
export const HAS_OLDER_IN_KEY = `EXISTS (SELECT 1 FROM deliveries o
      WHERE o.endpoint_id = deliveries.endpoint_id AND o.ordering_key = deliveries.ordering_key
        AND o.status IN ('pending', 'in_flight') AND o.id < deliveries.id)`

/**
 * True when the pending `deliveries` row must wait for its turn: it has an ordering key, its
 * endpoint is ordered, and an older row of its key is unfinished (SQL, as HAS_OLDER_IN_KEY).
 */
export const WAITS_IN_ORDER = `(ordering_key IS NOT NULL AND (SELECT ordered FROM endpoints WHERE id = deliveries.endpoint_id) = 1
      AND ${HAS_OLDER_IN_KEY})`

/**
 * Ends pending rows (a JSON array of ids) whose endpoint is deleted or disabled, as deleting
 * (docs/delivery.md: cancelled) and disabling (docs/delivery.md: dead) do; such a row would never be claimed.
 * Parameters: completed_at, updated_at, ids. Returns the status of each row it ended.
 */
export const FINISH_IF_ENDPOINT_GONE = `UPDATE deliveries
      SET status = CASE WHEN e.deleted_at IS NOT NULL THEN 'cancelled' ELSE 'dead' END,
          last_error = CASE WHEN e.deleted_at IS NOT NULL THEN 'endpoint_deleted' ELSE 'endpoint_disabled' END,
          claim_token = NULL, completed_at = ?, updated_at = ?
    FROM endpoints e
    WHERE deliveries.id IN (SELECT value FROM json_each(?)) AND deliveries.status = 'pending'
      AND e.id = deliveries.endpoint_id AND (e.deleted_at IS NOT NULL OR e.disabled = 1)
    RETURNING deliveries.status`

/**
 * The claim itself for n rows (db.ts multiRow), by rowid: the candidates carry it (read in the
 * same transaction, so it cannot have moved), which saves one id-index lookup per row. One claim
 * token for the whole claim (docs/delivery.md, "The queue"): a row claimed again gets another
 * claim's token. The rows of one statement share the lease their candidates read (@lease; rows
 * with another timeout go in another statement), so the update reads no endpoint. The rowids are
 * positional; @now, @lease and @token named (exported for the query-plan test).
 */
export const CLAIM_ROWS = (n: number): string => `UPDATE deliveries
      SET status = 'in_flight', claim_token = @token, attempts = attempts + 1, updated_at = @now, lease_until = @lease
    WHERE rowid IN (${tuples(n, '?')}) AND status = 'pending'`

/** The claim's other statements by name (exported for the query-plan test). */
export const CLAIM_SQL = {
  // A read, so an idle dispatcher's poll does not take the write lock (another process writing
  // the same file would wait behind it). Due rows of a paused endpoint still count as work.
  hasWork: `SELECT EXISTS (SELECT 1 FROM deliveries WHERE status = 'pending' AND next_attempt_at <= @now)
      OR EXISTS (SELECT 1 FROM deliveries WHERE status = 'in_flight' AND lease_until <= @now)`,
  expireLeases: `${EXPIRE_CLAIM} WHERE status = 'in_flight' AND lease_until <= @now`,
  // A waiting row with no older unfinished row of its key left, or of an endpoint no longer
  // ordered, is due now; the trigger deliveries_next_in_order should leave none (a repair).
  releaseWaiting: `UPDATE deliveries SET next_attempt_at = @now
    WHERE status = 'pending' AND next_attempt_at = ${WAITING_IN_ORDER}
      AND (endpoint_id NOT IN (SELECT id FROM endpoints WHERE ordered = 1) OR NOT ${HAS_OLDER_IN_KEY})`,
  window: WINDOW,
  ofKey: OF_KEY,
  dueEndpoints: DUE_ENDPOINTS,
  markExhausted: `UPDATE deliveries SET status = 'dead', last_error = COALESCE(last_error, 'attempts_exhausted'),
      claim_token = NULL, completed_at = @now, updated_at = @now
    WHERE id IN (SELECT value FROM json_each(@ids)) AND status = 'pending'`,
  finishGone: FINISH_IF_ENDPOINT_GONE,
} as const

/** The candidates' order: next_attempt_at, then id (ASCII, so JS and SQLite compare alike). */
const byDueThenId = (a: ClaimedDelivery, b: ClaimedDelivery): number =>
  a.nextAttemptAt - b.nextAttemptAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** Candidates grouped by the lease they read (one group unless their timeouts differ). */
function byLease(chosen: readonly Candidate[]): Map<number, Candidate[]> {
  const groups = new Map<number, Candidate[]>()
  for (const c of chosen) {
    const g = groups.get(c[10])
    if (g) g.push(c)
    else groups.set(c[10], [c])
  }
  return groups
}

/** A raw row of `window` or `ofKey` (candidateColumns; arrays are cheaper to build than objects). */
type Candidate = [
  rowid: number, id: string, nextAttemptAt: number, state: number,
  channel: Channel, eventId: string | null, endpointId: string | null, eventType: string, attempts: number, maxAttempts: number,
  leaseUntil: number, createdAt: number, eventBody: string | null, appId: string, payload: string | null, targetKey: string | null,
  rare: string | null,
]

/** RARE_COLUMNS of a candidate, parsed. */
type Rare = [notificationId: string | null, recipient: string | null, orderingKey: string | null, groupKey: string | null, lastStatusCode: number | null, lastError: string | null]
const NO_RARE: Rare = [null, null, null, null, null, null]

/** DUE_KEY of a candidate. */
const keyOf = (c: Candidate): string => dueKey({ endpointId: c[6], targetKey: c[15], channel: c[4] })

/** The delivery a candidate becomes once a claim at `now` with `claimToken` took it. */
function toClaimed(c: Candidate, claimToken: string, now: number): ClaimedDelivery {
  const rare = c[16] === null ? NO_RARE : (JSON.parse(c[16]) as Rare)
  return {
    id: c[1],
    channel: c[4],
    eventId: c[5],
    endpointId: c[6],
    notificationId: rare[0],
    recipient: rare[1],
    eventType: c[7],
    orderingKey: rare[2],
    payload: c[14],
    groupKey: rare[3],
    status: 'in_flight',
    attempts: c[8] + 1,
    maxAttempts: c[9],
    nextAttemptAt: c[2],
    claimToken,
    leaseUntil: c[10],
    lastStatusCode: rare[4],
    lastError: rare[5],
    createdAt: c[11],
    updatedAt: now,
    completedAt: null,
    eventBody: c[12],
    appId: c[13],
    targetKey: c[15],
  }
}

/** The named parameters of LEASE_UNTIL. */
type LeaseParams = { now: number; margin: number; defaultTimeout: number; channelTimeouts: string }

/** What one candidate scan found: rows to claim, and rows to finish instead. */
interface Picked {
  chosen: Candidate[]
  exhausted: string[]
  /** Rows of a deleted or disabled endpoint. */
  gone: string[]
}

/**
 * How long (by the claims' `now`) a second path that found nothing to take is not repeated,
 * unless a row became due meanwhile or an endpoint it found full has a free slot again.
 */
export const QUIET_MS = 100

/** The claim functions of the delivery store over `db`, and `noteDue` for the writes that make rows due. */
export interface Claimer extends Pick<DeliveriesStore, 'claimDue' | 'releaseWaitingInOrder'> {
  /** Tells the claimer a row of `key` (an endpoint or `#<channel>`, see DUE_KEY; undefined: of any) became due. */
  noteDue(key?: string): void
}

/** The claim functions of the delivery store over `db`; `onDue` as in createDeliveriesStore. */
export function createClaimer(db: Db, onDue: () => void): Claimer {
  const s = prepareAll(db, CLAIM_SQL)
  const claimRows = multiRow(db, CLAIM_ROWS, (rows: readonly Candidate[], from, n) => rows.slice(from, from + n).map((c) => c[0]))
  const hasWork = s.hasWork.pluck()
  const dueEndpoints = s.dueEndpoints.raw()
  const dueWindow = s.window.raw()
  const ofKey = s.ofKey.raw()
  // Where the per-endpoint path stopped last time, so successive claims take turns (round robin).
  let lastServed = ''
  // Why a second path may be skipped: while the head of the queue belongs to one saturated
  // endpoint, every claim hands over, and looking up the endpoints with due rows costs ~2.5 µs per
  // endpoint with pending rows (up to PASS_ENDPOINTS per claim). After passes that found nothing, the
  // next ones are skipped for QUIET_MS unless something changed: a row became due (counted by
  // `generation`, except rows of the endpoint that stopped the first path: they queue behind its
  // own backlog, which that path takes), or an endpoint the pass found full has a free slot again.
  let generation = 0
  let stoppedBy: string | null = null
  // The stopping endpoint whose new due rows went uncounted: once another endpoint (or none)
  // stops the first path, they no longer queue behind a backlog that path reads, so they count.
  let uncounted: string | null = null
  let quiet: { at: number; generation: number; full: string[] } | null = null
  // Passes stop after PASS_ENDPOINTS endpoints, so with more endpoints "found nothing" is a run
  // of passes, each going on where the previous stopped: once it has been round the ring from
  // `origin` with no row made due meanwhile, the claimer goes quiet as after one whole pass.
  let streak: { origin: string; crossed: boolean; generation: number; full: string[] } | null = null

  /**
   * Picks up to `limit` claimable rows. The first path reads the due queue in order (oldest
   * first) while every row it meets can be taken. At the first row whose endpoint has no free
   * slot (saturated, rate-limited, half-open), or after `4 × limit` rows (min 256) hidden by a
   * pause or an ordering barrier, it hands over to the second path: the endpoints with due rows,
   * in turns that continue from the previous claim, each giving its own due rows from the
   * per-endpoint index. So a backlog on one endpoint is never read past, and never delays the
   * others (docs/delivery.md isolation).
   */
  const pickCandidates = (opts: ClaimOptions, lease: LeaseParams): Picked => {
    const { now, limit, capacity } = opts
    const exclude = new Set(opts.excludeEndpoints ?? [])
    const picked: Picked = { chosen: [], exhausted: [], gone: [] }
    // Rows this claim picked per key (endpoint, or `#<channel>`).
    const taken = new Map<string, number>()
    // Free slots of a key after this claim's picks so far.
    const room = (key: string): number => {
      if (exclude.has(key)) return 0
      const free = capacity ? capacity(key) - (taken.get(key) ?? 0) : Infinity
      if (free <= 0) exclude.add(key)
      return free
    }
    // Takes the row if it can; false when it has to leave it (limit reached, or no room left on
    // its endpoint). Rows to finish are collected; blocked rows are passed over.
    const take = (c: Candidate): boolean => {
      const state = c[3]
      if (state === STATE.gone) picked.gone.push(c[1])
      else if (state === STATE.blocked) return true
      else if (state === STATE.exhausted) picked.exhausted.push(c[1])
      else {
        const key = keyOf(c)
        if (picked.chosen.length >= limit || room(key) <= 0) return false
        picked.chosen.push(c)
        taken.set(key, (taken.get(key) ?? 0) + 1)
      }
      return true
    }

    // The position after the last row the first path took or passed, and the endpoint whose row
    // stopped it (its new rows come after its own backlog, so this path reaches them itself).
    const at = { ...lease, afterAt: Number.MIN_SAFE_INTEGER, afterId: '' }
    let stopper: string | null = null
    const budget = Math.max(limit * 4, 256)
    let read = 0
    let handOver = false
    for (const r of dueWindow.iterate(lease) as IterableIterator<Candidate>) {
      if (!take(r)) {
        stopper = keyOf(r)
        handOver = true
        break
      }
      at.afterAt = r[2]
      at.afterId = r[1]
      if (picked.chosen.length >= limit) return picked
      if (++read >= budget) break
    }
    if (!handOver && read < budget) return picked
    if (uncounted !== null && uncounted !== stopper) {
      generation++
      uncounted = null
    }
    stoppedBy = stopper
    if (quiet !== null && quiet.generation === generation && now >= quiet.at && now - quiet.at < QUIET_MS && quiet.full.every((id) => room(id) <= 0)) {
      return picked
    }
    const before = picked.chosen.length
    const start = lastServed
    const run = streak !== null && streak.generation === generation ? streak : { origin: start, crossed: false, generation, full: [] }
    const { full } = run
    // `complete`: every endpoint has had its turn since `run.origin`. Having taken nothing by
    // then makes the next passes wait (QUIET_MS); a pass cut short by PASS_ENDPOINTS carries the run on.
    const secondPath = (complete: boolean): Picked => {
      const took = picked.chosen.length > before
      quiet = took || !complete ? null : { at: now, generation, full }
      streak = took || complete ? null : run
      return picked
    }

    // The second path: rows after the last one the first path took or passed, key by key (the
    // rows without an endpoint take their turns as `#<channel>`, before the first endpoint).
    const served = new Set<string>()
    const serve = (key: string): boolean => {
      if (served.has(key)) return false
      served.add(key)
      let want = Math.min(limit - picked.chosen.length, room(key))
      if (want <= 0 && key !== stopper) full.push(key)
      if (want > 0) {
        for (const r of ofKey.iterate({ ...at, key }) as IterableIterator<Candidate>) if (!take(r) || --want === 0) break
      }
      if (picked.chosen.length < limit) return false
      lastServed = key
      return true
    }
    let looked = 0
    for (let after = start; ; ) {
      const rows = dueEndpoints.all({ now, after }) as [string, number][]
      for (const [id, due] of rows) {
        // Past the run's origin again: every endpoint has had its turn.
        if (run.crossed && id > run.origin) return secondPath(true)
        if (due && serve(id)) return secondPath(true)
        if (++looked >= PASS_ENDPOINTS) {
          lastServed = id
          opts.onCutShort?.()
          return secondPath(false)
        }
      }
      if (rows.length === TURN_PAGE) after = rows[rows.length - 1]![0]
      else if (run.crossed) return secondPath(true)
      else {
        run.crossed = true
        after = ''
      }
    }
  }

  const claimTx = db.transaction((opts: ClaimOptions): ClaimedDelivery[] => {
    const { now, limit } = opts
    s.expireLeases.run({ now })
    if (limit <= 0) return []
    const lease: LeaseParams = { now, margin: leaseMarginOf(opts), defaultTimeout: opts.defaultTimeoutMs, channelTimeouts: JSON.stringify(opts.channelTimeoutsMs ?? {}) }
    const { chosen, exhausted, gone } = pickCandidates(opts, lease)
    if (exhausted.length > 0) s.markExhausted.run({ ids: JSON.stringify(exhausted), now })
    if (gone.length > 0) s.finishGone.run(now, now, JSON.stringify(gone))
    // Ending rows may make the next row of their ordering key due (deliveries_next_in_order).
    if (exhausted.length > 0 || gone.length > 0) generation++
    if (chosen.length === 0) return []
    const token = newClaimToken(opts)
    let changed = 0
    for (const [leaseUntil, rows] of byLease(chosen)) {
      const named = { now, token, lease: leaseUntil }
      claimRows(rows, undefined, (st, args) => (changed += st.run(...args, named).changes))
    }
    // Read in this transaction as pending, so every candidate is taken; were one not, the
    // candidates would not be the rows: roll the claim back.
    if (changed !== chosen.length) throw new Error(`claim took ${changed} of ${chosen.length} rows`)
    // The second path gives rows key by key; keep the candidates' order (due time, then id).
    return chosen.map((c) => toClaimed(c, token, now)).sort(byDueThenId)
  })

  /** Reports `n` rows made due by a repair; returns `n`. */
  const madeDue = (n: number): number => {
    if (n > 0) {
      generation++
      onDue()
    }
    return n
  }

  return {
    // Inside a transaction the lock is already held, and the caller usually just freed slots.
    claimDue: (opts) => (db.inTransaction || hasWork.get({ now: opts.now }) === 1 ? claimTx.immediate(opts) : []),
    releaseWaitingInOrder: (now) => madeDue(s.releaseWaiting.run({ now }).changes),
    noteDue(key) {
      if (key !== undefined && key === stoppedBy) uncounted = key
      else generation++
    },
  }
}
