/**
 * Circuit breaker and auto-disable policy (SPEC §5), as pure functions over an endpoint's
 * health counters. The sender applies the decisions; the dispatcher reads the state.
 */

/** Consecutive transport failures or 5xx responses that open the breaker. */
export const BREAKER_THRESHOLD = 5
/** The first pause; each further one doubles. */
export const BASE_PAUSE_MS = 30_000
/** The longest pause. */
export const MAX_PAUSE_MS = 600_000
/** Auto-disable also needs at least this many failed attempts in the window. */
export const DISABLE_MIN_FAILURES = 10

/** The health fields the policy reads. */
export interface BreakerHealth {
  consecutiveFailures: number
  failuresSinceSuccess: number
  failingSince: number | null
  pausedUntil: number | null
  pauseCount: number
}

/** Circuit state as the API reports it. */
export type CircuitState = 'closed' | 'open' | 'half_open'

/** `open` while paused; `half_open` after a pause until a success; otherwise `closed`. */
export function circuitState(h: Pick<BreakerHealth, 'pausedUntil' | 'pauseCount'>, now: number): CircuitState {
  if (h.pausedUntil !== null && h.pausedUntil > now) return 'open'
  if (h.pauseCount > 0) return 'half_open'
  return 'closed'
}

/** The length of pause number `pauseCount + 1`: 30 s, 60 s, 120 s … capped at 10 min. */
export function pauseDuration(pauseCount: number): number {
  return Math.min(BASE_PAUSE_MS * 2 ** Math.min(pauseCount, 20), MAX_PAUSE_MS)
}

/**
 * After a counted failure: the time the endpoint should be paused until, or null. A failed
 * half-open probe pauses again at once (doubled); failures that land while already paused
 * (requests that were in flight) do not extend the pause.
 */
export function pauseAfterFailure(h: BreakerHealth, now: number): number | null {
  const state = circuitState(h, now)
  if (state === 'open') return null
  if (state === 'half_open' || h.consecutiveFailures >= BREAKER_THRESHOLD) return now + pauseDuration(h.pauseCount)
  return null
}

/** True when the endpoint has failed for `disableAfterMs` with no success and >= 10 failures. */
export function shouldAutoDisable(h: BreakerHealth, now: number, disableAfterMs: number): boolean {
  return h.failuresSinceSuccess >= DISABLE_MIN_FAILURES && h.failingSince !== null && now - h.failingSince >= disableAfterMs
}
