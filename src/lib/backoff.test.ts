import { describe, expect, it } from 'vitest'
import { backoffDelayMs, nextAttemptAt, RECONNECT_BACKOFF } from './backoff.js'

describe('reconnect backoff', () => {
  it('doubles from the base with each failure, up to the cap', () => {
    const top = () => 1
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => backoffDelayMs(n, top))).toEqual([100, 200, 400, 800, 1600, 3200, 5000, 5000])
    expect(backoffDelayMs(1_000_000, top)).toBe(RECONNECT_BACKOFF.maxMs)
  })

  it('keeps half of the wait fixed and draws the other half', () => {
    expect(backoffDelayMs(3, () => 0)).toBe(200)
    expect(backoffDelayMs(3, () => 0.5)).toBe(300)
    expect(backoffDelayMs(9, () => 0)).toBe(2500)
    // An rng outside [0, 1) cannot push the wait outside its bounds.
    expect(backoffDelayMs(1, () => 7)).toBe(100)
    expect(backoffDelayMs(1, () => -1)).toBe(50)
  })

  it('treats zero or fractional failures as the first, and honours a policy', () => {
    expect(backoffDelayMs(0, () => 1)).toBe(100)
    expect(backoffDelayMs(2.9, () => 1)).toBe(200)
    expect(backoffDelayMs(3, () => 1, { baseMs: 10, maxMs: 30 })).toBe(30)
  })

  it('schedules the next attempt from the given time', () => {
    expect(nextAttemptAt(1_000, 2, () => 1)).toBe(1_200)
  })
})
