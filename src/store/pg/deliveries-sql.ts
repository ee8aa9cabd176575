/**
 * The SQL of the PostgreSQL delivery family (deliveries.ts, delivery-settle.ts), with positional
 * ($n) parameters.
 */
import { ROW_ATTEMPT } from '../delivery-rows.js'
import { DELIVERY_COLUMNS } from './delivery-list.js'
import { WAITING_IN_ORDER, type DeliveryStatus } from '../deliveries.js'
import { PG_DUE_KEY, PG_FINISH_IF_ENDPOINT_GONE, PG_WAITS_IN_ORDER } from './delivery-claim-sql.js'
const COLUMNS = DELIVERY_COLUMNS
const SETTLE_WHERE = `WHERE id = $1 AND claim_token = $2 AND status = 'in_flight' RETURNING status, attempts, ordering_key IS NOT NULL AS keyed`

/** The delivery family's statements by name (delivery-settle.ts takes the settle's). */
export const PG_DELIVERY_SQL = {
  // A new row of an ordered endpoint waits while an older row of its ordering key is unfinished
  // (decided in the statement, so no second round trip). ON CONFLICT without a target: PostgreSQL
  // takes one clause only, and a repeat hits deliveries_event or deliveries_notification.
  insert: `INSERT INTO deliveries (id, channel, event_id, endpoint_id, notification_id, recipient,
      event_type, ordering_key, payload, group_key, status, attempts, max_attempts, next_attempt_at, created_at, updated_at, app_id, target_key)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending', 0, $11,
      CASE WHEN $8::text IS NOT NULL AND $4::text IS NOT NULL AND EXISTS (SELECT 1 FROM endpoints e WHERE e.id = $4 AND e.ordered = 1
        AND EXISTS (SELECT 1 FROM deliveries o WHERE o.endpoint_id = $4 AND o.ordering_key = $8
          AND o.status IN ('pending', 'in_flight') AND o.id < $1)) THEN ${WAITING_IN_ORDER} ELSE $12 END,
      $13, $13, $14, $15)
    ON CONFLICT DO NOTHING
    RETURNING next_attempt_at AS "nextAttemptAt"`,
  // `enqueue` for a batch in one statement. The statement cannot see its own rows, so what a
  // single-row call would have read from the table about an earlier row of the batch is worked
  // out here: `dup` (it repeats a stored row, or an earlier row of the batch, so it is not
  // inserted) and `behind` (an earlier inserted row of the batch has its endpoint and key).
  enqueueMany: `WITH j AS (
      SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
          $8::text[], $9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::text[], $14::text[]) WITH ORDINALITY
        AS t(id, channel, event_id, endpoint_id, notification_id, recipient, event_type, ordering_key, payload, group_key,
          max_attempts, next_attempt_at, app_id, target_key, n)
    ), k AS (
      SELECT j.*, (
          (j.event_id IS NOT NULL AND j.endpoint_id IS NOT NULL AND (
            EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = j.event_id AND d.endpoint_id = j.endpoint_id)
            OR row_number() OVER (PARTITION BY j.event_id, j.endpoint_id ORDER BY j.n) > 1))
          OR (j.notification_id IS NOT NULL AND j.recipient IS NOT NULL AND (
            EXISTS (SELECT 1 FROM deliveries d WHERE d.notification_id = j.notification_id AND d.recipient = j.recipient AND d.channel = j.channel)
            OR row_number() OVER (PARTITION BY j.notification_id, j.recipient, j.channel ORDER BY j.n) > 1))
        ) AS dup
      FROM j
    ), w AS (
      SELECT k.*, coalesce(count(*) FILTER (WHERE NOT k.dup) OVER (PARTITION BY k.endpoint_id, k.ordering_key ORDER BY k.n
          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) > 0 AS behind
      FROM k
    )
    INSERT INTO deliveries (id, channel, event_id, endpoint_id, notification_id, recipient,
      event_type, ordering_key, payload, group_key, status, attempts, max_attempts, next_attempt_at, created_at, updated_at, app_id, target_key)
    SELECT w.id, w.channel, w.event_id, w.endpoint_id, w.notification_id, w.recipient, w.event_type, w.ordering_key, w.payload, w.group_key,
      'pending', 0, w.max_attempts,
      CASE WHEN w.ordering_key IS NOT NULL AND w.endpoint_id IS NOT NULL AND EXISTS (SELECT 1 FROM endpoints e WHERE e.id = w.endpoint_id AND e.ordered = 1)
        AND (w.behind OR EXISTS (SELECT 1 FROM deliveries o WHERE o.endpoint_id = w.endpoint_id AND o.ordering_key = w.ordering_key
          AND o.status IN ('pending', 'in_flight') AND o.id < w.id)) THEN ${WAITING_IN_ORDER} ELSE w.next_attempt_at END,
      $15, $15, w.app_id, w.target_key
    FROM w ORDER BY w.n
    ON CONFLICT DO NOTHING
    RETURNING id, next_attempt_at AS "nextAttemptAt"`,
  // The stored ids of rows `enqueueMany` did not insert, as `enqueue` looks them up.
  existingIds: `SELECT (SELECT d.id FROM deliveries d WHERE j.event_id <> '' AND d.event_id = j.event_id AND d.endpoint_id = j.endpoint_id) AS "byEvent",
      (SELECT d.id FROM deliveries d WHERE d.notification_id = j.notification_id AND d.recipient = j.recipient AND d.channel = j.channel) AS "byNotification"
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS j(event_id, endpoint_id, notification_id, recipient, channel, n)
    ORDER BY j.n`,
  // `insertDelivered(Many)`: finished notification rows; a row that repeats a stored row or an earlier one is skipped.
  insertDeliveredMany: `INSERT INTO deliveries (id, channel, event_id, endpoint_id, notification_id, recipient,
      event_type, ordering_key, payload, group_key, status, attempts, max_attempts, next_attempt_at, created_at, updated_at, completed_at, app_id)
    SELECT t.id, t.channel, NULL, NULL, t.notification_id, t.recipient, t.event_type, NULL, t.payload, t.group_key, 'success', 1,
      t.max_attempts, t.next_attempt_at, $10, $10, $10, t.app_id
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::bigint[], $11::text[])
      WITH ORDINALITY AS t(id, channel, notification_id, recipient, event_type, payload, group_key, max_attempts, next_attempt_at, app_id, n)
    ORDER BY t.n
    ON CONFLICT DO NOTHING
    RETURNING id`,
  logDelivered: `INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code, error, response_body)
    SELECT id, 1, $1, $2, 'success', NULL, NULL, NULL FROM unnest($3::text[]) WITH ORDINALITY AS t(id, n) ORDER BY n`,
  idByEvent: `SELECT id FROM deliveries WHERE event_id = $1 AND endpoint_id = $2`,
  idByNotification: `SELECT id FROM deliveries WHERE notification_id = $1 AND recipient = $2 AND channel = $3`,
  settleRetry: `UPDATE deliveries SET status = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'pending' END,
      next_attempt_at = $3, claim_token = NULL, lease_until = NULL,
      last_status_code = COALESCE($4, last_status_code), last_error = $5,
      completed_at = CASE WHEN attempts >= max_attempts THEN $6::bigint ELSE NULL END, updated_at = $6
    ${SETTLE_WHERE}`,
  settleDead: `UPDATE deliveries SET status = 'dead', claim_token = NULL, lease_until = NULL,
      last_status_code = COALESCE($3, last_status_code), last_error = $4, completed_at = $5, updated_at = $5
    ${SETTLE_WHERE}`,
  settleRefund: `UPDATE deliveries SET status = 'pending', attempts = greatest(attempts - 1, 0), next_attempt_at = $3,
      claim_token = NULL, lease_until = NULL, last_status_code = COALESCE($4, last_status_code), updated_at = $5
    ${SETTLE_WHERE}`,
  // Successes, the bulk of every settle, in one statement for the rows (with the attempts kept in
  // them: keptInRow) and one for the attempts that are not.
  settleSuccessMany: `UPDATE deliveries d SET status = 'success', claim_token = NULL, lease_until = NULL,
      last_status_code = j.code, last_error = NULL, completed_at = $1, updated_at = $1,
      success_started_at = j.started, success_duration_ms = j.duration, success_body = j.body
    FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::text[]) AS j(id, token, code, started, duration, body)
    WHERE d.id = j.id AND d.claim_token = j.token AND d.status = 'in_flight'
    RETURNING d.id, d.attempts, d.ordering_key IS NOT NULL AS keyed`,
  insertSuccessAttempts: `INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code, error, response_body)
    SELECT id, attempt, started_at, duration_ms, 'success', status_code, error, body
      FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::text[], $7::text[])
        WITH ORDINALITY AS t(id, attempt, started_at, duration_ms, status_code, error, body, n)
      ORDER BY n`,
  finishIfEndpointGone: PG_FINISH_IF_ENDPOINT_GONE,
  insertAttempt: `INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code, error, response_body)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
  get: `SELECT ${COLUMNS} FROM deliveries WHERE id = $1`,
  // The attempts rows, then the success's attempt kept in the delivery row (the last one: a
  // redeliver moves it into attempts before the row is attempted again).
  attempts: `SELECT * FROM (SELECT id, delivery_id AS "deliveryId", attempt, started_at AS "startedAt", duration_ms AS "durationMs",
      outcome, status_code AS "statusCode", error, response_body AS "responseBody"
    FROM attempts WHERE delivery_id = $1
    UNION ALL
    SELECT 0, ${ROW_ATTEMPT} FROM deliveries WHERE id = $1 AND success_started_at IS NOT NULL) t
    ORDER BY id = 0, id`,
  // The success's attempt kept in the row becomes an attempts row (history is kept), from the
  // row as it was: only if this statement's update took the row, so a concurrent redeliver that
  // won (and made the row pending) leaves no second copy.
  redeliver: `WITH old AS (SELECT ${ROW_ATTEMPT} FROM deliveries WHERE id = $1 AND success_started_at IS NOT NULL),
    upd AS (UPDATE deliveries SET status = 'pending', attempts = 0, claim_token = NULL,
      next_attempt_at = CASE WHEN ${PG_WAITS_IN_ORDER} THEN ${WAITING_IN_ORDER} ELSE $2 END,
      lease_until = NULL, completed_at = NULL, updated_at = $2,
      success_started_at = NULL, success_duration_ms = NULL, success_body = NULL
    WHERE id = $1 AND status IN ('success', 'dead', 'cancelled')
      AND (endpoint_id IS NULL OR EXISTS (SELECT 1 FROM endpoints e WHERE e.id = deliveries.endpoint_id AND e.disabled = 0 AND e.deleted_at IS NULL))
    RETURNING id),
    moved AS (INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code, error, response_body)
      SELECT o.* FROM old o JOIN upd u ON u.id = o.id)
    SELECT count(*)::int AS n FROM upd`,
  endpointGone: `SELECT 1 FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
    WHERE d.id = $1 AND (e.disabled = 1 OR e.deleted_at IS NOT NULL)`,
  exists: `SELECT 1 FROM deliveries WHERE id = $1`,
  recover: `UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = $4, claim_token = NULL,
      lease_until = NULL, completed_at = NULL, updated_at = $4
    WHERE endpoint_id = $1 AND status = 'dead' AND created_at >= $2 AND created_at < $3`,
  waitRecovered: `UPDATE deliveries SET next_attempt_at = ${WAITING_IN_ORDER}
    WHERE endpoint_id = $1 AND status = 'pending' AND attempts = 0 AND next_attempt_at = $2 AND ${PG_WAITS_IN_ORDER}`,
  // SQLite's trigger runs after each row, so there a row waiting behind an older pending row of
  // its key (ended by the same statement) is made due first: it ends with a real time. PostgreSQL
  // runs the trigger after the statement, so the statement does it (unless an older row of the
  // key is in flight, which keeps the turn as on SQLite).
  finishPendingForEndpoint: `UPDATE deliveries SET status = $2, last_error = $3, claim_token = NULL, completed_at = $4, updated_at = $4,
      next_attempt_at = CASE WHEN next_attempt_at = ${WAITING_IN_ORDER} AND ordering_key IS NOT NULL AND NOT EXISTS (SELECT 1 FROM deliveries o
          WHERE o.endpoint_id = deliveries.endpoint_id AND o.ordering_key = deliveries.ordering_key AND o.status = 'in_flight' AND o.id < deliveries.id)
        THEN $4::bigint ELSE next_attempt_at END
    WHERE status = 'pending' AND ${PG_DUE_KEY()} = $1`,
  deferPendingForEndpoint: `UPDATE deliveries SET next_attempt_at = $2, updated_at = $3
    WHERE status = 'pending' AND ${PG_DUE_KEY()} = $1 AND next_attempt_at < $2`,
  releaseHeldForEndpoint: `UPDATE deliveries SET next_attempt_at = $3, updated_at = $3
    WHERE status = 'pending' AND ${PG_DUE_KEY()} = $1 AND next_attempt_at = $2`,
  countByStatus: `SELECT status, count(*) AS n FROM deliveries GROUP BY status`,
  queueDepth: `SELECT (SELECT count(*) FROM deliveries WHERE status = 'pending') AS pending,
      (SELECT count(*) FROM deliveries WHERE status = 'in_flight') AS in_flight`,
  pendingByEndpoint: `SELECT endpoint_id AS "endpointId", count(*) AS n FROM deliveries
    WHERE status = 'pending' AND endpoint_id IS NOT NULL GROUP BY endpoint_id`,
  oldestPending: `SELECT min(next_attempt_at) AS t FROM deliveries WHERE status = 'pending' AND next_attempt_at < ${WAITING_IN_ORDER}`,
  byEvent: `SELECT ${COLUMNS} FROM deliveries WHERE event_id = $1 ORDER BY id`,
  byNotification: `SELECT ${COLUMNS} FROM deliveries WHERE notification_id = $1 ORDER BY id LIMIT $2`,
  countsByNotification: `SELECT status, count(*) AS n FROM deliveries WHERE notification_id = $1 GROUP BY status`,
  byGroup: `SELECT ${COLUMNS} FROM deliveries WHERE group_key = $1 AND status = 'pending' AND next_attempt_at <= $2 ORDER BY id`,
  holdPending: `UPDATE deliveries SET next_attempt_at = $2, updated_at = $3 WHERE id = ANY($1::text[]) AND status = 'pending'`,
  // $2 kind, $3 at, $4 status code, $5 error, $6 now.
  carryGroupMember: `UPDATE deliveries SET attempts = attempts + 1,
      status = CASE WHEN $2::text <> 'retry' THEN $2::text WHEN attempts + 1 >= max_attempts THEN 'dead' ELSE 'pending' END,
      next_attempt_at = CASE WHEN $2::text = 'retry' THEN $3::bigint ELSE next_attempt_at END,
      last_status_code = CASE WHEN $2::text = 'success' THEN $4::bigint ELSE COALESCE($4::bigint, last_status_code) END,
      last_error = $5, claim_token = NULL,
      completed_at = CASE WHEN $2::text = 'retry' AND attempts + 1 < max_attempts THEN NULL ELSE $6::bigint END, updated_at = $6
    WHERE id = $1 AND status = 'pending' RETURNING status, attempts`,
} as const

/** A row a settle statement returns. */
export type SettleRow = { status: DeliveryStatus; attempts: number; keyed: boolean }