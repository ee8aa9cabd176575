import { describe, expect, it } from 'vitest'
import { DEFAULTS } from '../config.js'
import { jitterFactor, MAX_RETRY_DELAY_MS, maxAttemptsFor, nextRetryAt, nextRetryDelay } from './retry-policy.js'

const S = DEFAULTS.retrySchedule
const HOUR = 3_600_000
const low = () => 0
const high = () => 0.999_999_999
const mid = () => 0.5

describe('retry schedule', () => {
  it('the default schedule gives 8 attempts; notifications get 6', () => {
    expect(S).toEqual([1_000, 10_000, 60_000, 600_000, HOUR, 6 * HOUR, 24 * HOUR])
    expect(maxAttemptsFor(S)).toBe(8)
    expect(maxAttemptsFor(DEFAULTS.notificationRetrySchedule)).toBe(6)
    expect(maxAttemptsFor([])).toBe(1)
  })

  it.each([
    [1, 1_000],
    [2, 10_000],
    [3, 60_000],
    [4, 600_000],
    [5, HOUR],
    [6, 6 * HOUR],
    [7, 24 * HOUR],
  ])('after attempt %d the delay is %d ms × [0.8, 1.2]', (attempt, base) => {
    expect(nextRetryDelay(S, attempt, mid)).toBe(base)
    expect(nextRetryDelay(S, attempt, low)).toBe(Math.round(base * 0.8))
    const top = nextRetryDelay(S, attempt, high)!
    expect(top).toBeLessThanOrEqual(Math.round(base * 1.2))
    expect(top).toBeGreaterThan(Math.round(base * 1.2) - 2)
  })

  it.each([8, 9, 0, -1])('after attempt %d there is no retry', (attempt) => {
    expect(nextRetryDelay(S, attempt, mid)).toBeNull()
    expect(nextRetryAt(1_000, S, attempt, mid)).toBeNull()
  })

  it('keeps jitter in [0.8, 1.2)', () => {
    expect(jitterFactor(low)).toBe(0.8)
    expect(jitterFactor(high)).toBeLessThan(1.2)
    expect(jitterFactor(high)).toBeGreaterThan(1.199)
  })

  it.each([
    ['raises a short delay', 1, 30_000, 30_000],
    ['never lowers the schedule', 4, 5_000, 600_000],
    ['is capped at 24 h', 1, 3 * 24 * HOUR, MAX_RETRY_DELAY_MS],
    ['is ignored when null', 2, null, 10_000],
  ])('Retry-After %s', (_name, attempt, retryAfter, expected) => {
    expect(nextRetryDelay(S, attempt as number, mid, retryAfter as number | null)).toBe(expected)
  })

  it('Retry-After does not shorten a configured step longer than 24 h', () => {
    expect(nextRetryDelay([48 * HOUR], 1, mid, 30 * HOUR)).toBe(48 * HOUR)
  })

  it('nextRetryAt adds the delay to now', () => {
    expect(nextRetryAt(5_000, S, 2, mid)).toBe(15_000)
    expect(nextRetryAt(5_000, [500, 2_000], 2, low, 4_000)).toBe(9_000)
  })
})
