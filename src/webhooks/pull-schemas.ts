/**
 * Request and response schemas of the pull-endpoint routes (docs/pull-endpoints.md):
 * claim, ack, nack and release. Durations are API durations (`30s`, `5m`) within each field's range.
 */
import { z } from '@hono/zod-openapi'
import { parseDuration } from '../lib/duration.js'
import { API_DURATION } from './deliver-at.js'
import { PublishedEventType } from './schemas.js'

/** A duration of the API between `min` and `max` milliseconds (inclusive). */
const durationBetween = (min: number, max: number, range: string, example: string) =>
  z
    .string()
    .max(32)
    .regex(API_DURATION, 'must be a duration: a number and a unit (ms, s, m, h or d) such as 30s, 5m or 1h')
    .refine((t) => {
      const ms = parseDuration(t)
      return ms !== null && ms >= min && ms <= max
    }, `must be from ${range}`)
    .openapi({ example })

/** The milliseconds of a duration the schemas above accepted. */
export const durationMs = (t: string): number => parseDuration(t)!

/** Claim's `max` default: 10 deliveries. */
export const DEFAULT_CLAIM_MAX = 10
/** Claim's `visibility` default: a claimed delivery stays hidden 30 s unless settled. */
export const DEFAULT_VISIBILITY = '30s'
/** Nack `snooze`'s default delay: 5 minutes. */
export const DEFAULT_SNOOZE = '5m'
/** At most this many items per settle call. */
export const MAX_SETTLE_ITEMS = 100

/** `POST /v1/endpoints/:id/claim` body. */
export const ClaimIn = z
  .object({
    max: z.number().int().min(1).max(100).optional().openapi({ description: 'At most this many deliveries (default 10)' }),
    visibility: durationBetween(1000, 12 * 3_600_000, '1s to 12h', '30s').optional().openapi({ description: 'Lease of each claimed delivery (default 30s)' }),
    wait: durationBetween(0, 20_000, '0s to 20s', '10s').optional().openapi({ description: 'With nothing due, wait up to this long for a delivery (default 0s)' }),
    event_types: z.array(PublishedEventType).min(1).max(100).optional().openapi({ description: 'Only these event types; an empty list is refused' }),
  })
  .openapi('ClaimIn')

/** One claimed delivery. */
export const ClaimedItem = z
  .object({
    delivery_id: z.string(),
    claim_token: z.string(),
    attempt: z.number().int().openapi({ description: 'This claim is attempt number…' }),
    lease_until: z.string().openapi({ description: 'Settle before this time, or the delivery becomes claimable again' }),
    ordering_key: z.string().nullable(),
    event: z.object({ id: z.string(), type: z.string(), timestamp: z.string(), data: z.unknown() }).nullable(),
  })
  .openapi('ClaimedItem')

/** `POST /v1/endpoints/:id/claim` answer. */
export const ClaimOut = z.object({ items: z.array(ClaimedItem) }).openapi('ClaimOut')

const token = { delivery_id: z.string().min(1).max(64), claim_token: z.string().min(1).max(128) }

/** `POST /v1/endpoints/:id/ack` body. */
export const AckIn = z.object({ items: z.array(z.object(token)).min(1).max(MAX_SETTLE_ITEMS) }).openapi('AckIn')

/** One nack item: how the delivery failed. */
export const NackItem = z
  .object({
    ...token,
    outcome: z.enum(['retry', 'dead', 'snooze']).optional().openapi({ description: 'retry (default), dead, or snooze (refunds the attempt)' }),
    delay: z.string().max(32).regex(API_DURATION, 'must be a duration such as 30s, 5m or 1h').optional().openapi({ description: 'retry: up to 24h (else the retry schedule); snooze: 1m to 1h (default 5m)' }),
    error: z.string().max(2000).optional().openapi({ description: 'Kept in the attempt log' }),
  })
  .openapi('NackItem')

/** `POST /v1/endpoints/:id/nack` body. */
export const NackIn = z.object({ items: z.array(NackItem).min(1).max(MAX_SETTLE_ITEMS) }).openapi('NackIn')

/** `POST /v1/endpoints/:id/release` body. */
export const ReleaseIn = z
  .object({
    items: z.array(z.object(token)).min(1).max(MAX_SETTLE_ITEMS),
    delay: durationBetween(0, 3_600_000, '0s to 1h', '0s').optional().openapi({ description: 'Claimable again after this long (default 0s)' }),
  })
  .openapi('ReleaseIn')

/** The result of one settled item. */
export const SettleResultOut = z
  .object({
    delivery_id: z.string(),
    result: z.enum(['acked', 'retry_scheduled', 'dead', 'snoozed', 'released', 'missed']),
  })
  .openapi('PullSettleResult')

/** A settle call's answer: one result per item, in input order. */
export const SettleOut = z.object({ results: z.array(SettleResultOut) }).openapi('PullSettleOut')

/** Bodies as the service receives them. */
export type ClaimInput = z.infer<typeof ClaimIn>
/** Ack body. */
export type AckInput = z.infer<typeof AckIn>
/** Nack body. */
export type NackInput = z.infer<typeof NackIn>
/** Release body. */
export type ReleaseInput = z.infer<typeof ReleaseIn>
/** One settle result. */
export type PullResult = z.infer<typeof SettleResultOut>
