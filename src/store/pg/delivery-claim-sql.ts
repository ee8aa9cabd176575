/**
 * The SQL of the PostgreSQL claim (delivery-claim.ts): candidate windows, the ordering barrier,
 * the lease sweep and the statements the claimer runs, with positional ($n) parameters.
 */
import { DELIVERY_COLUMNS } from './delivery-list.js'
import { WAITING_IN_ORDER } from '../deliveries.js'

/** The first key of every advisory lock a claim takes on an endpoint (the second is a hash of its id). */
export const ENDPOINT_LOCK_SPACE = 0x5062_0001

/** At most this many candidate rows one statement reads. */
export const WINDOW_MAX = 4096
/** At most this many windows the first path of one claim reads. */
export const MAX_WINDOWS = 16
/** Rows a window reads beyond the rows still wanted (some may be ended instead of claimed). */
export const WINDOW_SLACK = 16
/** Keys with pending rows the second path looks up per statement. */
export const TURN_PAGE = 32
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

/** SQL over `deliveries d` and `endpoints e`: the row is held back (a pull endpoint's: consumers claim those; a pause, or the ordering barrier); $1 is now. */
const BLOCKED = `(e.mode = 'pull' OR (e.paused_until IS NOT NULL AND e.paused_until > $1) OR (d.ordering_key IS NOT NULL AND e.ordered = 1 AND EXISTS (
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
  // A pull endpoint's lapsed claim is an attempt of the log (outcome `expired`, docs/pull-endpoints.md); before expireLeases.
  logPullExpired: `INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code, error, response_body)
    SELECT d.id, d.attempts, d.updated_at, greatest($1::bigint - d.updated_at, 0), 'expired', NULL, 'lease_expired', NULL
      FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
     WHERE d.status = 'in_flight' AND d.lease_until <= $1 AND e.mode = 'pull'
       AND d.id IN (SELECT id FROM deliveries WHERE status = 'in_flight' AND lease_until <= $1 FOR UPDATE SKIP LOCKED)`,
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
