/**
 * The clock repair (delivery/clock-repair.ts) treats a notification row held further out than
 * its hold limits as written by a wrong clock: no plan of `planSend` may ever exceed them.
 */
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { MAX_DIGEST_HOLD_MS, MAX_QUIET_HOLD_MS } from '../delivery/clock-repair.js'
import { planSend } from './schedule.js'

const HOUR = 3_600_000
const DAY = 24 * HOUR
// Zones with the largest DST shift (Troll, 2 h), half-hour shifts (Lord Howe), the extreme
// offsets (Kiritimati +14, Niue -11), quarter-hour offsets (Chatham) and common ones.
const ZONES = ['UTC', 'Antarctica/Troll', 'Australia/Lord_Howe', 'Pacific/Kiritimati', 'Pacific/Niue', 'Pacific/Chatham', 'America/New_York', 'Europe/Paris', 'Asia/Kolkata']
const hhmm = fc.tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })).map(([h, m]) => `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`)

describe('planSend stays within the clock repair hold limits', () => {
  it('for any zone, time, digest and quiet-hours window', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2030, 0, 1) }),
        fc.constantFrom(...ZONES),
        fc.constantFrom('none', 'daily', 'weekly') as fc.Arbitrary<'none' | 'daily' | 'weekly'>,
        fc.option(fc.record({ tz: fc.constantFrom(...ZONES), start: hhmm, end: hhmm })),
        (now, tz, digest, quietHours) => {
          const base = { now, severity: 'info', mandatory: false, digest, quietHours, tz } as const
          expect(planSend({ ...base, channel: 'email' }).at - now).toBeLessThanOrEqual(MAX_DIGEST_HOLD_MS + MAX_QUIET_HOLD_MS)
          expect(planSend({ ...base, channel: 'email', quietHours: null }).at - now).toBeLessThanOrEqual(MAX_DIGEST_HOLD_MS)
          expect(planSend({ ...base, channel: 'webhook' }).at - now).toBeLessThanOrEqual(MAX_QUIET_HOLD_MS)
        },
      ),
      { numRuns: 400 },
    )
  })

  it('and the limits are nearly reached: a weekly digest from just after Monday 00:00, then a 23:59 quiet window', () => {
    const now = Date.UTC(2026, 0, 19, 0, 0, 1) // a Monday
    const quietHours = { tz: 'UTC', start: '00:00', end: '23:59' }
    const base = { now, severity: 'info', mandatory: false, digest: 'weekly', quietHours, tz: 'UTC' } as const
    const email = planSend({ ...base, channel: 'email' }).at - now
    expect(email).toBeGreaterThan(7 * DAY + 23 * HOUR)
    expect(email).toBeLessThanOrEqual(MAX_DIGEST_HOLD_MS + MAX_QUIET_HOLD_MS)
    const webhook = planSend({ ...base, channel: 'webhook' }).at - now
    expect(webhook).toBeGreaterThan(23 * HOUR)
    expect(webhook).toBeLessThanOrEqual(MAX_QUIET_HOLD_MS)
  })

  it('and a weekly window that gains the clocks going back (1 h in Paris, 2 h at Troll) stays within them', () => {
    const quietHours = { tz: 'Europe/Paris', start: '00:00', end: '23:59' }
    // Monday 19 Oct 2026 00:00:01 in Paris (UTC+2); the clocks go back on Sunday 25 Oct.
    const paris = Date.UTC(2026, 9, 18, 22, 0, 1)
    const base = { now: paris, channel: 'email', severity: 'info', mandatory: false, digest: 'weekly', tz: 'Europe/Paris' } as const
    expect(planSend({ ...base, quietHours: null }).at - paris).toBe(7 * DAY + HOUR - 1000)
    expect(planSend({ ...base, quietHours }).at - paris).toBe(8 * DAY + HOUR - 61_000)
    expect(planSend({ ...base, quietHours }).at - paris).toBeLessThanOrEqual(MAX_DIGEST_HOLD_MS + MAX_QUIET_HOLD_MS)
    // Troll goes from UTC+2 back to UTC+0 on the same Sunday.
    const troll = Date.UTC(2026, 9, 18, 22, 0, 1)
    expect(planSend({ ...base, now: troll, tz: 'Antarctica/Troll', quietHours: null }).at - troll).toBe(MAX_DIGEST_HOLD_MS - 1000)
  })
})
