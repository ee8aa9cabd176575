import { describe, expect, it } from 'vitest'
import { formatDuration, parseDuration, parseDurationList } from './duration.js'

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['2s', 2_000],
    ['1.5s', 1_500],
    ['1m', 60_000],
    ['6h', 21_600_000],
    ['7d', 604_800_000],
    ['250', 250],
    [' 10 s ', 10_000],
    ['0s', 0],
  ])('%j → %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms)
  })

  it.each(['', 'abc', '-1s', '1w', '1 hour', 's', '1e3', '1.s', '10S', '1h30m'])('rejects %j', (text) => {
    expect(parseDuration(text)).toBeNull()
  })
})

describe('parseDurationList', () => {
  it.each([
    ['500ms,2s,1m', [500, 2_000, 60_000]],
    [' 1s , 10s ', [1_000, 10_000]],
    ['1s,,2s', [1_000, 2_000]],
    ['', null],
    [',', null],
    ['1s,nope', null],
  ])('%j → %j', (text, list) => {
    expect(parseDurationList(text)).toEqual(list)
  })
})

describe('formatDuration', () => {
  it.each([
    [0, '0ms'],
    [999, '999ms'],
    [1_500, '1.5s'],
    [60_000, '1m'],
    [5_400_000, '1.5h'],
    [86_400_000, '1d'],
  ])('%d → %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text)
  })
})
