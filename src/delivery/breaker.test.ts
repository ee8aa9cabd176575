import { describe, expect, it } from 'vitest'
import { circuitState, pauseAfterFailure, pauseDuration, shouldAutoDisable, type BreakerHealth } from './breaker.js'
import { TokenBucket } from './rate-limit.js'

const base: BreakerHealth = { consecutiveFailures: 0, failuresSinceSuccess: 0, failingSince: null, pausedUntil: null, pauseCount: 0 }

describe('breaker policy', () => {
  it('pauses 30 s, doubling to 10 min', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 50].map(pauseDuration)).toEqual([30e3, 60e3, 120e3, 240e3, 480e3, 600e3, 600e3, 600e3])
  })

  it('opens at the 5th consecutive failure, not before', () => {
    expect(pauseAfterFailure({ ...base, consecutiveFailures: 4 }, 0)).toBeNull()
    expect(pauseAfterFailure({ ...base, consecutiveFailures: 5 }, 1000)).toBe(31_000)
  })

  it('does not extend an open pause; a failed half-open probe pauses again, doubled', () => {
    expect(pauseAfterFailure({ ...base, consecutiveFailures: 7, pausedUntil: 5000, pauseCount: 1 }, 1000)).toBeNull()
    expect(pauseAfterFailure({ ...base, consecutiveFailures: 6, pausedUntil: 5000, pauseCount: 1 }, 5000)).toBe(65_000)
  })

  it('reports the circuit state', () => {
    expect(circuitState(base, 0)).toBe('closed')
    expect(circuitState({ pausedUntil: 10, pauseCount: 1 }, 5)).toBe('open')
    expect(circuitState({ pausedUntil: 10, pauseCount: 1 }, 10)).toBe('half_open')
  })

  it('auto-disables only with both the time window and 10 failures', () => {
    const day = 86_400_000
    expect(shouldAutoDisable({ ...base, failuresSinceSuccess: 10, failingSince: 0 }, 5 * day, 5 * day)).toBe(true)
    expect(shouldAutoDisable({ ...base, failuresSinceSuccess: 9, failingSince: 0 }, 5 * day, 5 * day)).toBe(false)
    expect(shouldAutoDisable({ ...base, failuresSinceSuccess: 100, failingSince: 1 }, 5 * day, 5 * day)).toBe(false)
  })
})

describe('token bucket', () => {
  it('allows a burst of one second, then refills at the rate', () => {
    const b = new TokenBucket(4, 0)
    expect(b.available(0)).toBe(4)
    b.take(4, 0)
    expect(b.available(0)).toBe(0)
    expect(b.waitMs(0)).toBe(250)
    expect(b.available(500)).toBe(2)
    expect(b.available(10_000)).toBe(4)
  })

  it('keeps a burst of 1 for rates below 1/s', () => {
    const b = new TokenBucket(0.5, 0)
    b.take(1, 0)
    expect(b.available(1999)).toBe(0)
    expect(b.available(2000)).toBe(1)
  })
})
