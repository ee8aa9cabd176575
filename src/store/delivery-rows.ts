/** The columns of a delivery row under the names `Delivery` gives them. */
export const DELIVERY_COLUMNS = `id, app_id AS appId, channel, event_id AS eventId, endpoint_id AS endpointId,
  notification_id AS notificationId, recipient, event_type AS eventType, ordering_key AS orderingKey,
  payload, group_key AS groupKey, status, attempts, max_attempts AS maxAttempts,
  next_attempt_at AS nextAttemptAt, claim_token AS claimToken, lease_until AS leaseUntil,
  last_status_code AS lastStatusCode, last_error AS lastError, created_at AS createdAt,
  updated_at AS updatedAt, completed_at AS completedAt, target_key AS targetKey`

/**
 * The success's attempt kept in a delivery row (schema.sql, v12), as the columns of an attempts
 * row (from `delivery_id` on): what the attempt listing reads and what a redeliver moves.
 */
export const ROW_ATTEMPT = `id, attempts, success_started_at, success_duration_ms, 'success', last_status_code, NULL, success_body`
