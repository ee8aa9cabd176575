import { toIso } from '../lib/clock.js'
import { WAITING_IN_ORDER, type Attempt, type Delivery } from '../store/deliveries.js'
import type { EndpointRow } from '../store/endpoints.js'
import type { EventRow } from '../store/events.js'
import { circuitState } from '../delivery/breaker.js'
import type { DeliveryOutput, EndpointOutput, EventOutput } from './types.js'

/** What a custom header's value reads as to a caller who may not read signing secrets (docs/delivery.md). */
export const MASKED_HEADER_VALUE = '********'

/** Custom headers with every value masked: the names stay, the values (upstream credentials) do not. */
export function maskHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of Object.keys(headers)) out[name] = MASKED_HEADER_VALUE
  return out
}

/** An endpoint as the API shows it: settings and health, never the secret. */
export function endpointOut(e: EndpointRow, now: number): EndpointOutput {
  return {
    id: e.id,
    app_id: e.appId,
    mode: e.mode,
    url: e.url,
    description: e.description,
    event_types: e.eventTypes,
    headers: e.headers,
    method: e.method,
    timeout_ms: e.timeoutMs,
    max_concurrency: e.maxConcurrency,
    rate_limit: e.rateLimit,
    ordered: e.ordered,
    retry_schedule: e.retrySchedule,
    signature: e.signature,
    metadata: e.metadata,
    disabled: e.disabled,
    disabled_reason: e.disabledReason,
    last_success_at: toIso(e.lastSuccessAt),
    // Every failed attempt since the last success (4xx and 429 too); the breaker keeps its own
    // count of transport errors and 5xx.
    consecutive_failures: e.failuresSinceSuccess,
    failing_since: toIso(e.failingSince),
    circuit: circuitState(e, now),
    paused_until: e.pausedUntil !== null && e.pausedUntil > now ? toIso(e.pausedUntil) : null,
    breaker_threshold: e.breakerThreshold,
    breaker_pause_ms: e.breakerPauseMs,
    breaker_max_pause_ms: e.breakerMaxPauseMs,
    created_at: toIso(e.createdAt),
    updated_at: toIso(e.updatedAt),
  }
}

/** One attempt of the log. */
export function attemptOut(a: Attempt) {
  return {
    attempt: a.attempt,
    started_at: toIso(a.startedAt),
    duration_ms: a.durationMs,
    outcome: a.outcome,
    status_code: a.statusCode,
    error: a.error,
    response_body: a.responseBody,
  }
}

/** A delivery; pass `attempts` to include the attempt log. */
export function deliveryOut(d: Delivery): DeliveryOutput
export function deliveryOut(d: Delivery, attempts: readonly Attempt[]): DeliveryOutput & { attempts: NonNullable<DeliveryOutput['attempts']> }
export function deliveryOut(d: Delivery, attempts?: readonly Attempt[]): DeliveryOutput {
  return {
    id: d.id,
    app_id: d.appId,
    channel: d.channel,
    event_id: d.eventId,
    endpoint_id: d.endpointId,
    notification_id: d.notificationId,
    recipient: d.recipient,
    event_type: d.eventType,
    ordering_key: d.orderingKey,
    status: d.status,
    attempt_count: d.attempts,
    max_attempts: d.maxAttempts,
    // A row waiting for an older row of its ordering key has no time of its own yet.
    next_attempt_at: d.status === 'pending' && d.nextAttemptAt < WAITING_IN_ORDER ? toIso(d.nextAttemptAt) : null,
    last_status_code: d.lastStatusCode,
    last_error: d.lastError,
    created_at: toIso(d.createdAt),
    updated_at: toIso(d.updatedAt),
    completed_at: toIso(d.completedAt),
    ...(attempts ? { attempts: attempts.map(attemptOut) } : {}),
  }
}

/** An event with its envelope's data and its deliveries. */
export function eventOut(e: EventRow, deliveries: readonly Delivery[]): EventOutput {
  return { ...eventSummary(e), deliveries: deliveries.map((d) => deliveryOut(d)) }
}

/** An event as the events list returns it: the envelope without its deliveries. */
export function eventSummary(e: EventRow): Omit<EventOutput, 'deliveries'> {
  const envelope = JSON.parse(e.body) as { timestamp: string; data: unknown }
  return {
    id: e.id,
    app_id: e.appId,
    type: e.type,
    ordering_key: e.orderingKey,
    client_id: e.clientId,
    data: envelope.data,
    timestamp: envelope.timestamp,
    created_at: toIso(e.createdAt),
  }
}
