import { z } from '@hono/zod-openapi'
import { decimalInt } from '../lib/query-number.js'
import { MAX_PAGE_SIZE } from '../lib/cursor.js'
import { jsonObject } from '../lib/json-object.js'
import { AppId } from '../apps/schemas.js'
import { API_DURATION, Delay, DeliverAt } from './deliver-at.js'

const headerValue = (v: unknown): v is string => typeof v === 'string' && v.length <= 4096

/**
 * Request and response schemas of the webhook API (docs/api.md). They are structural: the service
 * applies the semantic rules (URL safety, header names, secret format) on top and reports them
 * in the same `validation_failed` shape. The API attaches them to its OpenAPI routes.
 */

/**
 * An event type a publisher may send: `[a-zA-Z0-9_.:-]{1,200}`, not starting with `postbox.` or
 * `notification.`, the types Postbox publishes itself (receivers act on those as coming from it).
 */
export const EventType = z
  .string()
  .regex(/^[a-zA-Z0-9_.:-]{1,200}$/, 'must match [a-zA-Z0-9_.:-]{1,200}')
  .refine((t) => !t.startsWith('postbox.') && !t.startsWith('notification.'), 'must not start with postbox. or notification. (reserved for events Postbox publishes)')
  .openapi({ description: 'Types starting with postbox. or notification. are reserved for events Postbox publishes' })

/**
 * An event type Postbox publishes itself: the notification webhook channel sends
 * `notification.<topic>`, and a topic may have the full 200 characters, so 13 more are allowed.
 */
export const PublishedEventType = z.string().regex(/^[a-zA-Z0-9_.:-]{1,213}$/, 'must match [a-zA-Z0-9_.:-]{1,213}')

/** An event-type filter: an exact type, `*`, or a prefix wildcard such as `invoice.*`. */
export const EventTypePattern = z
  .string()
  .regex(/^(\*|[a-zA-Z0-9_.:-]{1,200}(\.\*)?|[a-zA-Z0-9_.:-]{1,199}\*)$/, 'must be an event type, "*" or a prefix ending in "*"')

/** One retry delay: a duration string (`500ms`, `2s`, `1m`, `6h`, `1d`) or milliseconds. */
export const RetryDelay = z.union([
  z.number().int().min(0).max(86_400_000),
  z.string().regex(API_DURATION, 'must be a duration: a number and a unit (ms, s, m, h or d) such as 500ms, 2s, 1m, 6h or 1d'),
])

const endpointFields = {
  url: z.string().min(1).max(2048).openapi({ example: 'https://example.com/hooks' }),
  description: z.string().max(1000),
  event_types: z.array(EventTypePattern).max(200).nullable().openapi({ example: ['invoice.*', 'user.created'] }),
  headers: jsonObject('must be an object of strings of at most 4096 characters', headerValue).openapi({
    additionalProperties: { type: 'string', maxLength: 4096 },
  }),
  method: z.enum(['POST', 'PUT']),
  timeout_ms: z.number().int().min(1000).max(60_000),
  max_concurrency: z.number().int().min(1).max(1000),
  rate_limit: z.number().positive().max(100_000).nullable(),
  ordered: z.boolean(),
  retry_schedule: z.array(RetryDelay).max(50).nullable().openapi({ example: ['1s', '10s', '1m'] }),
  signature: z.enum(['standard', 'hmac-sha256']),
  secret: z.string().min(1).max(512),
  disabled: z.boolean(),
  metadata: jsonObject('must be an object'),
  breaker_threshold: z.number().int().min(1).max(100).nullable().openapi({
    description: 'Percent of the last 20 attempts that must have failed (the last 5 in a row) to open the breaker; null = POSTBOX_BREAKER_THRESHOLD',
  }),
  breaker_pause_ms: z.number().int().min(1000).max(3_600_000).nullable().openapi({ description: 'First breaker pause; null = POSTBOX_BREAKER_PAUSE' }),
  breaker_max_pause_ms: z.number().int().min(1000).max(3_600_000).nullable().openapi({ description: 'Longest breaker pause; null = POSTBOX_BREAKER_MAX_PAUSE' }),
}

/** `POST /v1/endpoints` body: `url` is required for a push endpoint; a pull endpoint has none (docs/pull-endpoints.md). */
export const EndpointCreate = z
  .object({
    app_id: AppId.optional(),
    mode: z.enum(['push', 'pull']).optional().openapi({ description: 'push (default): Postbox sends; pull: consumers claim (no url, secret or signature). Never changes.' }),
    url: endpointFields.url.optional(),
    description: endpointFields.description.optional(),
    event_types: endpointFields.event_types.optional(),
    headers: endpointFields.headers.optional(),
    method: endpointFields.method.optional(),
    timeout_ms: endpointFields.timeout_ms.optional(),
    max_concurrency: endpointFields.max_concurrency.optional(),
    rate_limit: endpointFields.rate_limit.optional(),
    ordered: endpointFields.ordered.optional(),
    retry_schedule: endpointFields.retry_schedule.optional(),
    signature: endpointFields.signature.optional(),
    secret: endpointFields.secret.optional(),
    disabled: endpointFields.disabled.optional(),
    metadata: endpointFields.metadata.optional(),
    breaker_threshold: endpointFields.breaker_threshold.optional(),
    breaker_pause_ms: endpointFields.breaker_pause_ms.optional(),
    breaker_max_pause_ms: endpointFields.breaker_max_pause_ms.optional(),
  })
  .openapi('EndpointCreate')

/** `PATCH /v1/endpoints/:id` body: the create fields except `secret` (rotate it instead), all optional; `mode` only as it is. */
export const EndpointUpdate = EndpointCreate.omit({ secret: true }).partial().openapi('EndpointUpdate')

/** An endpoint as the API returns it; `secret` appears only in the create response. */
export const EndpointOut = z
  .object({
    id: z.string().openapi({ example: 'ep_01jd0000000000000000000000' }),
    app_id: z.string(),
    mode: z.enum(['push', 'pull']),
    url: z.string().openapi({ description: "'' for a pull endpoint" }),
    description: z.string(),
    event_types: z.array(z.string()).nullable(),
    headers: z.record(z.string(), z.string()),
    method: z.enum(['POST', 'PUT']),
    timeout_ms: z.number().int(),
    max_concurrency: z.number().int(),
    rate_limit: z.number().nullable(),
    ordered: z.boolean(),
    /** Delays in milliseconds; null means the global schedule. */
    retry_schedule: z.array(z.number().int()).nullable(),
    signature: z.enum(['standard', 'hmac-sha256']),
    metadata: z.record(z.string(), z.unknown()),
    disabled: z.boolean(),
    disabled_reason: z.string().nullable(),
    last_success_at: z.string().nullable(),
    consecutive_failures: z.number().int().openapi({ description: 'Failed attempts since the last success (any failure: transport error, 5xx, 4xx, 429)' }),
    failing_since: z.string().nullable().openapi({ description: 'When the first failure after the last success happened; null while healthy' }),
    circuit: z.enum(['closed', 'open', 'half_open']).openapi({
      description: 'open: paused, its deliveries held until paused_until; half_open: one probe goes out; closed: a success closed it',
    }),
    paused_until: z.string().nullable().openapi({ description: 'While open: when the pause ends and the probe goes out' }),
    breaker_threshold: z.number().int().nullable(),
    breaker_pause_ms: z.number().int().nullable(),
    breaker_max_pause_ms: z.number().int().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    secret: z.string().optional(),
  })
  .openapi('EndpointOut')

/** `{data, next_cursor}` page of endpoints. */
export const EndpointList = z
  .object({ data: z.array(EndpointOut), next_cursor: z.string().nullable() })
  .openapi('EndpointList')

/** `POST /v1/events` body. */
export const EventIn = z
  .object({
    type: EventType.openapi({ example: 'invoice.paid' }),
    data: jsonObject('must be an object').openapi({ example: { invoice_id: 'in_1' } }),
    id: z.string().min(1).max(200).regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces').optional(),
    ordering_key: z.string().min(1).max(200).optional(),
    app_id: AppId.optional(),
    deliver_at: DeliverAt.optional(),
    delay: Delay.optional(),
  })
  .openapi('EventIn')

/** `POST /v1/events/batch` body: 1–1,000 events, one transaction. */
export const EventBatchIn = z.object({ events: z.array(EventIn).min(1).max(1000) }).openapi('EventBatchIn')

/** The answer to an accepted (or deduplicated) event. */
export const EventAccepted = z
  .object({
    id: z.string(),
    app_id: z.string(),
    type: z.string(),
    deliveries: z.number().int(),
    deduplicated: z.boolean(),
    created_at: z.string(),
    deliver_at: z.string().optional().openapi({ description: 'When its deliveries become due; present on a delayed event' }),
  })
  .openapi('EventAccepted')

/** A batch item refused on its own (schema validation, archived or unknown type); the rest of the batch is accepted. */
export const EventItemError = z
  .object({ error: z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() }) })
  .openapi('EventItemError')

/** `{results}` of a batch, in input order. */
export const EventBatchAccepted = z.object({ results: z.array(z.union([EventAccepted, EventItemError])) }).openapi('EventBatchAccepted')

/** `POST /v1/endpoints/:id/secret/rotate` body. */
export const RotateSecretIn = z
  .object({
    secret: z.string().min(1).max(512).optional(),
    grace_seconds: z.number().int().min(0).max(30 * 86_400).optional(),
  })
  .openapi('RotateSecretIn')

/** `{secret}`: the current signing secret. */
export const SecretOut = z.object({ secret: z.string() }).openapi('SecretOut')

/** A point in time given as an ISO 8601 time with a zone, or as a duration back from now (`1h` is an hour ago). */
const TimeOrAgo = (what: string) =>
  z.union([z.iso.datetime({ offset: true }), z.string().max(32).regex(/^\s*\d+(\.\d+)?\s*(ms|s|m|h|d)?\s*$/, 'must be an ISO 8601 time or a duration such as 30m, 1h or 2d')]).openapi({
    example: '1h',
    description: `${what}: an ISO 8601 time with a zone (2030-01-01T09:00:00Z) or a duration back from now (30m, 1h, 2d)`,
  })

/** `POST /v1/endpoints/:id/recover` body: dead deliveries created in `[since, until)`. */
export const RecoverIn = z
  .object({
    since: TimeOrAgo('Start of the range'),
    until: TimeOrAgo('End of the range (default: now)').optional(),
  })
  .openapi('RecoverIn')

/** `POST /v1/endpoints/:id/test` body: a catalog type whose example to send (postbox.ping when absent). */
export const TestIn = z.object({ event_type: z.string().regex(/^[a-zA-Z0-9_.:-]{1,200}$/, 'must match [a-zA-Z0-9_.:-]{1,200}').optional() }).openapi('EndpointTestIn')

/** `{queued: n}` of a recover. */
export const RecoverOut = z.object({ queued: z.number().int() }).openapi('RecoverOut')

/** One logged attempt. */
export const AttemptOut = z
  .object({
    attempt: z.number().int(),
    started_at: z.string(),
    duration_ms: z.number().int(),
    outcome: z.string(),
    status_code: z.number().int().nullable(),
    error: z.string().nullable(),
    response_body: z.string().nullable(),
  })
  .openapi('AttemptOut')

/** A delivery as the API returns it; `attempts` is present on `GET /v1/deliveries/:id`. */
export const DeliveryOut = z
  .object({
    id: z.string(),
    app_id: z.string(),
    channel: z.string(),
    event_id: z.string().nullable(),
    endpoint_id: z.string().nullable(),
    notification_id: z.string().nullable(),
    recipient: z.string().nullable(),
    event_type: z.string(),
    ordering_key: z.string().nullable(),
    status: z.enum(['pending', 'in_flight', 'success', 'dead', 'cancelled']),
    attempt_count: z.number().int(),
    max_attempts: z.number().int(),
    next_attempt_at: z.string().nullable(),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    completed_at: z.string().nullable(),
    attempts: z.array(AttemptOut).optional(),
  })
  .openapi('DeliveryOut')

/** `{data, next_cursor}` page of deliveries. */
export const DeliveryList = z
  .object({ data: z.array(DeliveryOut), next_cursor: z.string().nullable() })
  .openapi('DeliveryList')

const SHORT_PAGES =
  'With event_type (unless status is pending or in_flight) or status=success, and no event_id or notification_id, a page reads at most 10,000 deliveries: it may hold fewer than `limit` (even none) while next_cursor continues the read.'

/** `GET /v1/deliveries` query. */
export const DeliveryQuery = z
  .object({
    status: z.enum(['pending', 'in_flight', 'success', 'dead', 'cancelled']).optional().openapi({ description: SHORT_PAGES }),
    endpoint_id: z.string().max(200).optional(),
    event_type: z
      .string()
      .regex(/^[a-zA-Z0-9_.:-]{1,213}$/, 'must be one exact event type (no wildcards)')
      .optional()
      .openapi({ description: SHORT_PAGES }),
    event_id: z.string().max(200).optional().openapi({ description: "The event's deliveries (one per endpoint)" }),
    notification_id: z.string().max(200).optional().openapi({ description: "The notification's deliveries (per recipient and channel)" }),
    app_id: AppId.optional().openapi({ description: 'Only this application' }),
    since: z.iso.datetime({ offset: true }).optional().openapi({ description: 'Created at or after (ISO 8601)' }),
    until: z.iso.datetime({ offset: true }).optional().openapi({ description: 'Created before (ISO 8601)' }),
    limit: decimalInt(1, MAX_PAGE_SIZE).optional(),
    cursor: z.string().max(400).optional(),
  })
  .openapi('DeliveryQuery')

/** An event in the events list: its envelope, without deliveries. */
export const EventSummary = z
  .object({
    id: z.string(),
    app_id: z.string(),
    type: z.string(),
    ordering_key: z.string().nullable(),
    client_id: z.string().nullable(),
    data: z.unknown(),
    timestamp: z.string(),
    created_at: z.string(),
  })
  .openapi('EventSummary')

/** `GET /v1/events/:id`: the event, its envelope and its deliveries. */
export const EventOut = EventSummary.extend({ deliveries: z.array(DeliveryOut) }).openapi('EventOut')

/** `{data, next_cursor}` page of events. */
export const EventList = z.object({ data: z.array(EventSummary), next_cursor: z.string().nullable() }).openapi('EventList')

/** `GET /v1/events` query. */
export const EventQuery = z
  .object({
    type: z
      .string()
      .regex(/^[a-zA-Z0-9_.:-]{1,213}$/, 'must be one exact event type (no wildcards)')
      .optional()
      .openapi({ description: 'Only events of this exact type (indexed); wildcards are refused' }),
    limit: decimalInt(1, MAX_PAGE_SIZE).optional(),
    app_id: AppId.optional().openapi({ description: 'Only this application' }),
    cursor: z.string().max(400).optional(),
  })
  .openapi('EventQuery')
