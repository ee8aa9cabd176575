import { describe, expect, it } from 'vitest'
import { isCalendarTime, parseIsoTime } from './iso-time.js'

describe('isCalendarTime', () => {
  it.each([
    ['2026-02-28T00:00:00Z', true],
    ['2028-02-29T12:30Z', true],
    ['2026-12-31T23:59:59.999+02:00', true],
    ['2026-02-30T00:00:00Z', false],
    ['2026-02-29T00:00:00Z', false],
    ['2100-02-29T00:00:00Z', false],
    ['2026-04-31T00:00:00Z', false],
    ['2026-13-01T00:00:00Z', false],
    ['2026-00-10T00:00:00Z', false],
    ['2026-01-00T00:00:00Z', false],
    ['2026-01-01T24:00:00Z', false],
    ['2026-01-01T23:60:00Z', false],
    ['2026-01-01T23:59:60Z', false],
    ['2026-01-01T00:00:00+24:00', false],
    ['2026-01-01T00:00:00', false],
    ['2026-01-01', false],
  ])('%s: %s', (text, ok) => expect(isCalendarTime(text)).toBe(ok))

  it('parseIsoTime gives epoch ms or null', () => {
    expect(parseIsoTime('2026-03-01T00:00:00Z')).toBe(Date.UTC(2026, 2, 1))
    expect(parseIsoTime('2026-02-30T00:00:00Z')).toBeNull()
  })
})
