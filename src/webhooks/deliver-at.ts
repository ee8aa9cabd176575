import { z } from '@hono/zod-openapi'
import { parseDuration } from '../lib/duration.js'
import type { Issue } from './rules.js'

/** How far ahead an event or request may be scheduled (docs/requests.md): 30 days. */
export const MAX_DELAY_MS = 30 * 86_400_000

/** `deliver_at`: an ISO 8601 time with a zone (`Z` or an offset). */
export const DeliverAt = z
  .string()
  .max(64)
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/, 'must be an ISO 8601 time with a zone, such as 2030-01-01T09:00:00Z')
  .openapi({ example: '2030-01-01T09:00:00Z', description: 'When to deliver; at most 30 days ahead; a past time is now' })

/** `delay`: a duration such as `30s`, `15m` or `2h`. */
export const Delay = z
  .string()
  .max(32)
  .regex(/^\s*\d+(\.\d+)?\s*(ms|s|m|h|d)?\s*$/, 'must be a duration such as 30s, 15m, 2h or 1d')
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
    const t = Date.parse(input.deliver_at)
    if (Number.isNaN(t)) return { issues: [{ path: path('deliver_at'), message: 'is not a valid time' }] }
    at = Math.max(now, t)
    if (at - now > MAX_DELAY_MS) return { issues: [{ path: path('deliver_at'), message: 'must be at most 30 days ahead' }] }
  } else if (input.delay !== undefined) {
    const ms = parseDuration(input.delay)
    if (ms === null) return { issues: [{ path: path('delay'), message: 'must be a duration such as 30s, 15m, 2h or 1d' }] }
    if (ms > MAX_DELAY_MS) return { issues: [{ path: path('delay'), message: 'must be at most 30d' }] }
    at = now + ms
  }
  return { at }
}
