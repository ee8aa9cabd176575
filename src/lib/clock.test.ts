import { describe, expect, it } from 'vitest'
import { ManualClock, toIso } from './clock.js'

describe('toIso', () => {
  it.each([
    [0, '1970-01-01T00:00:00.000Z'],
    [Date.UTC(2026, 10, 30, 4, 12, 50, 7), '2026-11-30T04:12:50.007Z'],
    [0, '1970-01-01T00:00:00.000Z'],
    [null, null],
    [undefined, null],
  ])('%s → %s (the one-entry cache never returns a stale value)', (ms, iso) => {
    expect(toIso(ms)).toBe(iso)
  })
})

describe('ManualClock', () => {
  it('moves only when told to', () => {
    const c = new ManualClock(1000)
    c.advance(500)
    expect(c.now()).toBe(1500)
    c.set(10)
    expect(c.now()).toBe(10)
  })
})
