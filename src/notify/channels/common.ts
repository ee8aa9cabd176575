import type { ClaimedDelivery } from '../../store/deliveries.js'
import type { ChannelResult } from '../../delivery/channel.js'
import type { Rng } from '../../lib/clock.js'
import { nextRetryAt } from '../../delivery/retry-policy.js'
import { decodePayload, type DeliveryPayload } from '../delivery-payload.js'

/** Parses a notification delivery's payload; null when it is not one. */
export function readPayload(d: ClaimedDelivery): DeliveryPayload | null {
  return decodePayload(d.payload, d)
}

/** A retry at the notification schedule's next delay, or dead when the schedule is spent. */
export function retryOrDead(
  d: ClaimedDelivery,
  schedule: readonly number[],
  now: number,
  rng: Rng,
  attempt: ChannelResult['attempt'],
): ChannelResult {
  const at = nextRetryAt(now, schedule, d.attempts, rng)
  return { outcome: at === null ? { kind: 'dead' } : { kind: 'retry', at }, attempt }
}

/** A permanent failure with an error code and no I/O. */
export function deadWith(error: string, now: number): ChannelResult {
  return { outcome: { kind: 'dead' }, attempt: { startedAt: now, durationMs: 0, error } }
}
