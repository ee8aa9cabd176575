import { describe, expect, it } from 'vitest'
import { digestWindowEnd, inQuietHours, localParts, planSend, quietHoursEnd, zonedTime } from './schedule.js'

const t = (iso: string) => Date.parse(iso)
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

describe('quiet hours', () => {
  const cases: { name: string; qh: { tz: string; start: string; end: string }; at: string; quiet: boolean; end: string | null }[] = [
    { name: 'same-day window, inside (New York)', qh: { tz: 'America/New_York', start: '09:00', end: '17:00' }, at: '2026-01-15T15:00:00Z', quiet: true, end: '2026-01-15T22:00:00.000Z' },
    { name: 'same-day window, after (New York)', qh: { tz: 'America/New_York', start: '09:00', end: '17:00' }, at: '2026-01-15T23:00:00Z', quiet: false, end: null },
    { name: 'same-day window, end is exclusive', qh: { tz: 'America/New_York', start: '09:00', end: '17:00' }, at: '2026-01-15T22:00:00Z', quiet: false, end: null },
    { name: 'overnight, before midnight (Paris)', qh: { tz: 'Europe/Paris', start: '22:00', end: '07:00' }, at: '2026-01-15T22:30:00Z', quiet: true, end: '2026-01-16T06:00:00.000Z' },
    { name: 'overnight, after midnight (Paris)', qh: { tz: 'Europe/Paris', start: '22:00', end: '07:00' }, at: '2026-01-16T05:00:00Z', quiet: true, end: '2026-01-16T06:00:00.000Z' },
    { name: 'overnight, daytime (Paris)', qh: { tz: 'Europe/Paris', start: '22:00', end: '07:00' }, at: '2026-01-16T12:00:00Z', quiet: false, end: null },
    { name: 'half-hour zone (Kolkata)', qh: { tz: 'Asia/Kolkata', start: '22:00', end: '07:00' }, at: '2026-01-15T17:00:00Z', quiet: true, end: '2026-01-16T01:30:00.000Z' },
    { name: 'Kolkata just before start', qh: { tz: 'Asia/Kolkata', start: '22:00', end: '07:00' }, at: '2026-01-15T16:29:00Z', quiet: false, end: null },
    { name: 'across the spring DST jump (Paris, 29 Mar 2026)', qh: { tz: 'Europe/Paris', start: '22:00', end: '07:00' }, at: '2026-03-28T22:00:00Z', quiet: true, end: '2026-03-29T05:00:00.000Z' },
    { name: 'across the autumn DST change (New York, 1 Nov 2026)', qh: { tz: 'America/New_York', start: '23:00', end: '06:00' }, at: '2026-11-01T03:30:00Z', quiet: true, end: '2026-11-01T11:00:00.000Z' },
    { name: 'start = end means no quiet hours', qh: { tz: 'UTC', start: '08:00', end: '08:00' }, at: '2026-01-15T08:00:00Z', quiet: false, end: null },
  ]
  for (const c of cases) {
    it(c.name, () => {
      expect(inQuietHours(t(c.at), c.qh)).toBe(c.quiet)
      expect(iso(quietHoursEnd(t(c.at), c.qh))).toBe(c.end)
    })
  }
})

describe('digest windows', () => {
  const cases: { name: string; at: string; digest: 'daily' | 'weekly'; tz: string; end: string }[] = [
    { name: 'daily, UTC', at: '2026-01-15T10:00:00Z', digest: 'daily', tz: 'UTC', end: '2026-01-16T00:00:00.000Z' },
    { name: 'daily, New York evening', at: '2026-01-16T03:00:00Z', digest: 'daily', tz: 'America/New_York', end: '2026-01-16T05:00:00.000Z' },
    { name: 'daily, New York, DST starts overnight', at: '2026-03-08T12:00:00Z', digest: 'daily', tz: 'America/New_York', end: '2026-03-09T04:00:00.000Z' },
    { name: 'daily, Kolkata', at: '2026-01-15T20:00:00Z', digest: 'daily', tz: 'Asia/Kolkata', end: '2026-01-16T18:30:00.000Z' },
    { name: 'weekly from a Thursday', at: '2026-01-15T10:00:00Z', digest: 'weekly', tz: 'UTC', end: '2026-01-19T00:00:00.000Z' },
    { name: 'weekly from a Monday goes to the next Monday', at: '2026-01-19T10:00:00Z', digest: 'weekly', tz: 'UTC', end: '2026-01-26T00:00:00.000Z' },
    { name: 'weekly, local Monday 00:00 already passed in Paris', at: '2026-01-18T23:00:00Z', digest: 'weekly', tz: 'Europe/Paris', end: '2026-01-25T23:00:00.000Z' },
    { name: 'weekly, Sunday in UTC', at: '2026-01-18T12:00:00Z', digest: 'weekly', tz: 'UTC', end: '2026-01-19T00:00:00.000Z' },
  ]
  for (const c of cases) {
    it(c.name, () => expect(iso(digestWindowEnd(t(c.at), c.digest, c.tz))).toBe(c.end))
  }
})

describe('planSend', () => {
  const quiet = { tz: 'Europe/Paris', start: '22:00', end: '07:00' }
  const now = t('2026-01-15T22:30:00Z') // 23:30 in Paris
  const base = { now, severity: 'info' as const, mandatory: false, digest: 'none' as const, quietHours: quiet, tz: 'Europe/Paris' }

  it('delays email and webhook to the end of quiet hours', () => {
    expect(iso(planSend({ ...base, channel: 'email' }).at)).toBe('2026-01-16T06:00:00.000Z')
    expect(iso(planSend({ ...base, channel: 'webhook' }).at)).toBe('2026-01-16T06:00:00.000Z')
  })
  it('never delays the inbox', () => {
    expect(planSend({ ...base, channel: 'inbox', digest: 'daily' })).toEqual({ at: now, windowEnd: null })
  })
  it('lets critical severity bypass quiet hours', () => {
    expect(planSend({ ...base, channel: 'email', severity: 'critical' }).at).toBe(now)
  })
  it('lets mandatory topics skip quiet hours and digests', () => {
    expect(planSend({ ...base, channel: 'email', mandatory: true, digest: 'weekly' })).toEqual({ at: now, windowEnd: null })
  })
  it('holds email digests until the window end', () => {
    const plan = planSend({ ...base, quietHours: null, channel: 'email', digest: 'daily' })
    expect(iso(plan.windowEnd)).toBe('2026-01-15T23:00:00.000Z') // 00:00 in Paris, 30 min later
    expect(plan.at).toBe(plan.windowEnd)
  })
  it('does not digest webhooks', () => {
    expect(planSend({ ...base, quietHours: null, channel: 'webhook', digest: 'daily' })).toEqual({ at: now, windowEnd: null })
  })
})

describe('zoned time', () => {
  it('round-trips local wall-clock times', () => {
    const ms = zonedTime(2026, 7, 1, 9, 30, 'Asia/Kolkata')
    expect(new Date(ms).toISOString()).toBe('2026-07-01T04:00:00.000Z')
    expect(localParts(ms, 'Asia/Kolkata')).toMatchObject({ hour: 9, minute: 30, day: 1 })
  })
  it('resolves a time skipped by DST to the moment of the jump', () => {
    const ms = zonedTime(2026, 3, 8, 2, 30, 'America/New_York')
    expect(new Date(ms).toISOString()).toBe('2026-03-08T07:00:00.000Z') // 03:00 EDT
    expect(new Date(zonedTime(2026, 3, 29, 2, 30, 'Europe/Paris')).toISOString()).toBe('2026-03-29T01:00:00.000Z') // 03:00 CEST
  })
  it('resolves an ambiguous time (the clock goes back) to its first occurrence', () => {
    expect(new Date(zonedTime(2026, 10, 25, 2, 30, 'Europe/Paris')).toISOString()).toBe('2026-10-25T00:30:00.000Z') // 02:30 CEST
    expect(new Date(zonedTime(2026, 11, 1, 1, 30, 'America/New_York')).toISOString()).toBe('2026-11-01T05:30:00.000Z') // 01:30 EDT
  })
  it('is exact on ordinary days either side of a transition', () => {
    expect(new Date(zonedTime(2026, 3, 28, 7, 0, 'Europe/Paris')).toISOString()).toBe('2026-03-28T06:00:00.000Z')
    expect(new Date(zonedTime(2026, 3, 30, 7, 0, 'Europe/Paris')).toISOString()).toBe('2026-03-30T05:00:00.000Z')
  })
})
