import { BREAKER_WINDOW, circuitState, pauseAfterFailure, type BreakerHealth, type CircuitState } from './breaker.js'

/** The bits of the breaker's window of latest attempts. */
const WINDOW_MASK = (1 << BREAKER_WINDOW) - 1

/** In-flight requests per origin (docs/requests.md), as an endpoint's default max_concurrency. */
export const ORIGIN_CONCURRENCY = 16
/** At most this many failing origins are remembered; the oldest is forgotten first. */
const MAX_TRACKED = 10_000

/**
 * The breaker of each request origin (docs/requests.md): the endpoint breaker's policy
 * (breaker.ts, the same pure functions) over counters kept in memory by the claiming process.
 * A healthy origin has no entry. After a restart every origin starts closed: the worst case is
 * one more round of failures before a dead host pauses again.
 */
export function createOriginHealth(concurrency = ORIGIN_CONCURRENCY) {
  const byKey = new Map<string, BreakerHealth>()
  const fresh = (): BreakerHealth => ({ recentFailures: 0, recentAttempts: 0, failuresSinceSuccess: 0, failingSince: null, pausedUntil: null, pauseCount: 0 })

  return {
    /** The origin's circuit state now. */
    circuit(key: string, now: number): CircuitState {
      const h = byKey.get(key)
      return h === undefined ? 'closed' : circuitState(h, now)
    },
    /** Requests the origin may have in flight now: `concurrency`, one probe while half-open, none while open. */
    slots(key: string, now: number): number {
      const state = this.circuit(key, now)
      return state === 'open' ? 0 : state === 'half_open' ? 1 : concurrency
    },
    /** A success closes the origin's breaker. */
    recordSuccess(key: string): void {
      byKey.delete(key)
    },
    /**
     * Counts a failure (`breakerFailure`: a transport error or 5xx) and returns the time the origin
     * is paused until when its breaker is open (just opened, or already), else null.
     */
    recordFailure(key: string, breakerFailure: boolean, now: number): { pausedUntil: number | null; opened: boolean } {
      let h = byKey.get(key)
      if (h === undefined) {
        if (byKey.size >= MAX_TRACKED) byKey.delete(byKey.keys().next().value!)
        byKey.set(key, (h = fresh()))
      }
      h.failuresSinceSuccess++
      h.failingSince ??= now
      if (!breakerFailure) return { pausedUntil: null, opened: false }
      // As the endpoint breaker counts (store/endpoints.ts): a breaker failure enters the window.
      h.recentFailures = ((h.recentFailures << 1) | 1) & WINDOW_MASK
      h.recentAttempts = Math.min(h.recentAttempts + 1, BREAKER_WINDOW)
      const until = pauseAfterFailure(h, now)
      if (until === null) return { pausedUntil: h.pausedUntil !== null && h.pausedUntil > now ? h.pausedUntil : null, opened: false }
      h.pausedUntil = until
      h.pauseCount++
      return { pausedUntil: until, opened: true }
    },
  }
}

/** The per-origin breakers of the request channel. */
export type OriginHealth = ReturnType<typeof createOriginHealth>
