import { describe, expect, it } from 'vitest'
import { BREAKER_WINDOW, circuitState, failureRateExceeded, pauseAfterFailure, pauseDuration, shouldAutoDisable, type BreakerHealth } from './breaker.js'
import { TokenBucket } from './rate-limit.js'

const base: BreakerHealth = { recentFailures: 0, recentAttempts: 0, failuresSinceSuccess: 0, failingSince: null, pausedUntil: null, pauseCount: 0 }
/** The health after `outcomes` ('x' a failure, '.' a success), oldest first. */
const after = (outcomes: string): BreakerHealth => {
  let recentFailures = 0
  for (const o of outcomes) recentFailures = ((recentFailures << 1) | (o === 'x' ? 1 : 0)) & ((1 << BREAKER_WINDOW) - 1)
  return { ...base, recentFailures, recentAttempts: Math.min(outcomes.length, BREAKER_WINDOW) }
}

describe('breaker policy', () => {
  it('pauses 30 s, doubling to 10 min, or by the given policy', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 50].map((n) => pauseDuration(n))).toEqual([30e3, 60e3, 120e3, 240e3, 480e3, 600e3, 600e3, 600e3])
    expect([0, 1, 2].map((n) => pauseDuration(n, { threshold: 80, pauseMs: 5000, maxPauseMs: 12_000 }))).toEqual([5000, 10_000, 12_000])
  })

  it('opens at the 5th failure of a fresh endpoint, not before', () => {
    expect(pauseAfterFailure(after('xxxx'), 0)).toBeNull()
    expect(pauseAfterFailure(after('xxxxx'), 1000)).toBe(31_000)
  })

  it('opens on a failure rate: the last 5 failed and at least 80 % of the last 20', () => {
    // 15 successes then 5 failures: 25 % of the window.
    expect(failureRateExceeded(after('.'.repeat(15) + 'xxxxx'), 80)).toBe(false)
    // 16 of 20 with the last 5 failed: open.
    expect(failureRateExceeded(after('....' + 'x'.repeat(16)), 80)).toBe(true)
    // 19 of 20, but a success among the last 5: still closed.
    expect(failureRateExceeded(after('x'.repeat(16) + '.' + 'xxx'), 80)).toBe(false)
    // Only the last 20 count.
    expect(failureRateExceeded(after('.'.repeat(100) + '....' + 'x'.repeat(16)), 80)).toBe(true)
    // A lower threshold opens sooner.
    expect(failureRateExceeded(after('.'.repeat(15) + 'xxxxx'), 25)).toBe(true)
  })

  it('never opens for a receiver failing every other request, or in blocks of five', () => {
    expect(failureRateExceeded(after('x.'.repeat(100)), 80)).toBe(false)
    expect(failureRateExceeded(after('.x'.repeat(100)), 80)).toBe(false)
    let outcomes = ''
    for (let i = 0; i < 200; i++) {
      outcomes += Math.floor(i / 5) % 2 === 1 ? 'x' : '.'
      expect(failureRateExceeded(after(outcomes), 80)).toBe(false)
    }
  })

  it('does not extend an open pause; a failed half-open probe pauses again, doubled', () => {
    expect(pauseAfterFailure({ ...after('xxxxxxx'), pausedUntil: 5000, pauseCount: 1 }, 1000)).toBeNull()
    expect(pauseAfterFailure({ ...after('xxxxxx'), pausedUntil: 5000, pauseCount: 1 }, 5000)).toBe(65_000)
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
