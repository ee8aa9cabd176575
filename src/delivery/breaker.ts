/**
 * Circuit breaker and auto-disable policy (docs/delivery.md, "Circuit breaker"), as pure
 * functions over an endpoint's health counters. The sender applies the decisions; the
 * dispatcher reads the state.
 */

/** The breaker looks at this many of an endpoint's latest attempts. */
export const BREAKER_WINDOW = 20
/** It opens only when at least this many of the latest attempts failed in a row. */
export const BREAKER_RUN = 5
/** Default share of the window (percent) that must have failed for the breaker to open. */
export const DEFAULT_BREAKER_THRESHOLD = 80
/** The first pause by default; each further one doubles. */
export const BASE_PAUSE_MS = 30_000
/** The longest pause by default. */
export const MAX_PAUSE_MS = 600_000
/** No pause setting may exceed this (clock repair treats a longer pause as a clock error). */
export const PAUSE_LIMIT_MS = 3_600_000
/** Auto-disable also needs at least this many failed attempts in the window. */
export const DISABLE_MIN_FAILURES = 10

/** When the breaker opens and how long it pauses: the endpoint's settings over the global ones. */
export interface BreakerPolicy {
  /** Percent of the last BREAKER_WINDOW attempts that must have failed (1–100). */
  threshold: number
  /** The first pause. */
  pauseMs: number
  /** The longest pause. */
  maxPauseMs: number
}

/** The policy of the defaults. */
export const DEFAULT_BREAKER_POLICY: BreakerPolicy = { threshold: DEFAULT_BREAKER_THRESHOLD, pauseMs: BASE_PAUSE_MS, maxPauseMs: MAX_PAUSE_MS }

/** The health fields the policy reads. */
export interface BreakerHealth {
  /** The latest attempts, newest in bit 0: 1 = a transport failure or 5xx, 0 = a success. */
  recentFailures: number
  /** How many attempts `recentFailures` holds (at most BREAKER_WINDOW). */
  recentAttempts: number
  failuresSinceSuccess: number
  failingSince: number | null
  pausedUntil: number | null
  pauseCount: number
}

/** Circuit state as the API, the metrics and `postbox stats` report it. */
export type CircuitState = 'closed' | 'open' | 'half_open'

/** `open` while paused; `half_open` after a pause until a success (the probe); otherwise `closed`. */
export function circuitState(h: Pick<BreakerHealth, 'pausedUntil' | 'pauseCount'>, now: number): CircuitState {
  if (h.pausedUntil !== null && h.pausedUntil > now) return 'open'
  if (h.pauseCount > 0) return 'half_open'
  return 'closed'
}

/** The length of pause number `pauseCount + 1`: 30 s, 60 s, 120 s … capped at 10 min by default. */
export function pauseDuration(pauseCount: number, policy: BreakerPolicy = DEFAULT_BREAKER_POLICY): number {
  return Math.min(policy.pauseMs * 2 ** Math.min(pauseCount, 20), policy.maxPauseMs)
}

/** Set bits of a 32-bit number. */
function bitCount(n: number): number {
  let c = 0
  for (let v = n >>> 0; v !== 0; v &= v - 1) c++
  return c
}

/**
 * True when the failure rate says the endpoint is down: the last BREAKER_RUN attempts failed and
 * at least `threshold` percent of the last BREAKER_WINDOW did. A receiver failing half of its
 * requests never gets there, so it keeps its traffic and its failures go through the retries.
 */
export function failureRateExceeded(h: Pick<BreakerHealth, 'recentFailures' | 'recentAttempts'>, threshold: number): boolean {
  const n = Math.min(h.recentAttempts, BREAKER_WINDOW)
  const run = (1 << BREAKER_RUN) - 1
  if (n < BREAKER_RUN || (h.recentFailures & run) !== run) return false
  return bitCount(h.recentFailures & ((1 << n) - 1)) * 100 >= threshold * n
}

/**
 * After a counted failure: the time the endpoint should be paused until, or null. A failed
 * half-open probe pauses again at once (doubled); failures that land while already paused
 * (requests that were in flight) do not extend the pause.
 */
export function pauseAfterFailure(h: BreakerHealth, now: number, policy: BreakerPolicy = DEFAULT_BREAKER_POLICY): number | null {
  const state = circuitState(h, now)
  if (state === 'open') return null
  if (state === 'half_open' || failureRateExceeded(h, policy.threshold)) return now + pauseDuration(h.pauseCount, policy)
  return null
}

/** True when the endpoint has failed for `disableAfterMs` with no success and >= 10 failures. */
export function shouldAutoDisable(h: BreakerHealth, now: number, disableAfterMs: number): boolean {
  return h.failuresSinceSuccess >= DISABLE_MIN_FAILURES && h.failingSince !== null && now - h.failingSince >= disableAfterMs
}
