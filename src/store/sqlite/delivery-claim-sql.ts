/**
 * The SQL of the SQLite claim (docs/delivery.md, "The queue"): the candidate scans, the lease a
 * claim gives, the ordering barrier and the statements the claimer prepares (delivery-claim.ts).
 */
import { tuples } from './db.js'
import { WAITING_IN_ORDER } from '../deliveries.js'

// Limits are literals, and the claim stops stepping through rows when it has enough: SQLite
// (built with STAT4) re-prepares a statement on every run when its LIMIT is a bound parameter,
// which measured 7-25 µs per statement.
/** At most this many rows one claim statement can step through. */
const WINDOW_MAX = 4096
/** How many endpoints with pending rows the second path of a claim looks at per statement. */
export const TURN_PAGE = 32

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
export const STATE = { exhausted: 1, gone: 2, blocked: 3 } as const
const GONE = '(e.deleted_at IS NOT NULL OR e.disabled = 1)'
const stateOf = (blocked: string): string =>
  `CASE WHEN ${GONE} THEN ${STATE.gone} WHEN ${blocked} THEN ${STATE.blocked} WHEN d.attempts >= d.max_attempts THEN ${STATE.exhausted} ELSE 0 END`
// A pull endpoint's row is never the dispatcher's: its consumers claim it (pull-claim.ts).
const BLOCKED = `(e.mode IS 'pull' OR (e.paused_until IS NOT NULL AND e.paused_until > @now) OR (d.ordering_key IS NOT NULL AND e.ordered IS 1 AND EXISTS (
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
  // A pull endpoint's lapsed claim is an attempt of the log (outcome `expired`, docs/pull-endpoints.md);
  // run before expireLeases, which the dispatcher's claims sweep for every row.
  logPullExpired: `INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code, error, response_body)
    SELECT d.id, d.attempts, d.updated_at, max(@now - d.updated_at, 0), 'expired', NULL, 'lease_expired', NULL
      FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
     WHERE d.status = 'in_flight' AND d.lease_until <= @now AND e.mode = 'pull'`,
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
