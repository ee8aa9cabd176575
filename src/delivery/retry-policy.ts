import type { Rng } from '../lib/clock.js'

/** The cap on what a receiver's Retry-After can ask for (docs/delivery.md); it never shortens the schedule. */
export const MAX_RETRY_DELAY_MS = 86_400_000

/** Total attempts a schedule allows: the first try plus one per delay. */
export function maxAttemptsFor(schedule: readonly number[]): number {
  return schedule.length + 1
}

/** The jitter factor in [0.8, 1.2] drawn from `rng`. */
export function jitterFactor(rng: Rng): number {
  return 0.8 + 0.4 * rng()
}

/**
 * The delay before the next attempt after attempt number `attempt` (1-based) failed, or null
 * when the schedule is exhausted. Retry-After (ms) raises the delay, never lowers it, and is
 * capped at 24 h. The cap applies only to Retry-After: the configured schedule keeps its full
 * jitter (the default last step, 24 h, spans 19.2 h-28.8 h), so a receiver cannot push retries
 * out beyond a day but an operator's own schedule is taken as written.
 */
export function nextRetryDelay(
  schedule: readonly number[],
  attempt: number,
  rng: Rng,
  retryAfterMs: number | null = null,
): number | null {
  const base = schedule[attempt - 1]
  if (base === undefined) return null
  const jittered = Math.round(base * jitterFactor(rng))
  if (retryAfterMs === null || retryAfterMs <= jittered) return jittered
  return Math.max(jittered, Math.min(retryAfterMs, MAX_RETRY_DELAY_MS))
}

/** The absolute time of the next attempt, or null when the schedule is exhausted. */
export function nextRetryAt(
  now: number,
  schedule: readonly number[],
  attempt: number,
  rng: Rng,
  retryAfterMs: number | null = null,
): number | null {
  const delay = nextRetryDelay(schedule, attempt, rng, retryAfterMs)
  return delay === null ? null : now + delay
}
