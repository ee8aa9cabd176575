import type { Rng } from './clock.js'

/**
 * Reconnect backoff (docs/operations.md, "When the database drops connections or restarts"): the
 * wait grows from `baseMs`, doubling with each consecutive failure, up to `maxMs`; half of it is
 * fixed and half random ("equal jitter"), so the nodes of a fleet that lost the database at the
 * same moment do not all come back in the same millisecond. Pure: time and randomness are given.
 */
export interface BackoffPolicy {
  /** The wait after the first failure (before jitter). */
  readonly baseMs: number
  /** The longest wait (before jitter). */
  readonly maxMs: number
}

/** The policy of every database reconnect: 100 ms, 200 ms, 400 ms … up to 5 s. */
export const RECONNECT_BACKOFF: BackoffPolicy = Object.freeze({ baseMs: 100, maxMs: 5_000 })

/** The wait after `failures` consecutive failures (1 or more): between half and all of min(maxMs, baseMs·2^(failures−1)). */
export function backoffDelayMs(failures: number, rng: Rng, policy: BackoffPolicy = RECONNECT_BACKOFF): number {
  const n = Math.max(1, Math.floor(failures))
  // 2^30 is far past any cap; the exponent is bounded so the product stays finite.
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(n - 1, 30))
  const r = Math.min(Math.max(rng(), 0), 1)
  return Math.round(ceiling / 2 + (ceiling / 2) * r)
}

/** When to try again after `failures` consecutive failures, the last at `now` (epoch ms). */
export function nextAttemptAt(now: number, failures: number, rng: Rng, policy: BackoffPolicy = RECONNECT_BACKOFF): number {
  return now + backoffDelayMs(failures, rng, policy)
}
