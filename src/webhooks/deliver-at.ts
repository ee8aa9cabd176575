import { z } from '@hono/zod-openapi'
import { parseDuration } from '../lib/duration.js'
import { isCalendarTime } from '../lib/iso-time.js'
import type { Issue } from './rules.js'

/** How far ahead an event or request may be scheduled (docs/requests.md): 30 days. */
export const MAX_DELAY_MS = 30 * 86_400_000

/** `deliver_at`: an ISO 8601 time with a zone (`Z` or an offset). */
export const DeliverAt = z
  .string()
  .max(64)
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/, 'must be an ISO 8601 time with a zone, such as 2030-01-01T09:00:00Z')
  // 2026-02-30 would roll over to March 2: an impossible date or time of day is refused.
  .refine(isCalendarTime, 'is not a real calendar date and time')
  .openapi({ example: '2030-01-01T09:00:00Z', description: 'When to deliver; at most 30 days ahead; a past time is now' })

/**
 * A duration of the API: a number and its unit, nothing between or around them (`30s`, `1.5h`,
 * `0s`). SPEC.md writes durations so; `10 m` and a bare `0` are refused (a bare number was read
 * as milliseconds, which no caller of `delay` means).
 */
export const API_DURATION = /^\d{1,15}(\.\d{1,9})?(ms|s|m|h|d)$/

/** `delay`: a duration such as `30s`, `15m` or `2h`. */
export const Delay = z
  .string()
  .max(32)
  .regex(API_DURATION, 'must be a duration: a number and a unit (ms, s, m, h or d) such as 30s, 15m, 2h or 1d')
  .openapi({ example: '2h', description: 'Deliver after this long; at most 30d' })

/**
 * When something given `deliver_at` or `delay` (at most one) becomes due, or the issues that
 * refuse it: more than 30 days ahead, both given, an impossible date. A past time is now.
 */
export function resolveDeliverAt(input: { deliver_at?: string | undefined; delay?: string | undefined }, now: number, prefix = ''): { at: number } | { issues: Issue[] } {
  const path = (f: string): string => (prefix ? `${prefix}.${f}` : f)
  if (input.deliver_at !== undefined && input.delay !== undefined) return { issues: [{ path: path('delay'), message: 'give deliver_at or delay, not both' }] }
  let at = now
  if (input.deliver_at !== undefined) {
    const t = isCalendarTime(input.deliver_at) ? Date.parse(input.deliver_at) : NaN
    if (Number.isNaN(t)) return { issues: [{ path: path('deliver_at'), message: 'is not a valid time' }] }
    at = Math.max(now, t)
    if (at - now > MAX_DELAY_MS) return { issues: [{ path: path('deliver_at'), message: 'must be at most 30 days ahead' }] }
  } else if (input.delay !== undefined) {
    const ms = API_DURATION.test(input.delay) ? parseDuration(input.delay) : null
    if (ms === null) return { issues: [{ path: path('delay'), message: 'must be a duration such as 30s, 15m, 2h or 1d' }] }
    if (ms > MAX_DELAY_MS) return { issues: [{ path: path('delay'), message: 'must be at most 30d' }] }
    at = now + ms
  }
  return { at }
}
