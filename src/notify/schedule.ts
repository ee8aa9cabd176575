import type { QuietHours } from '../store/directory.js'

/** Wall-clock parts of an instant in a time zone. */
export interface LocalParts {
  year: number
  month: number
  day: number
  hour: number
  minute: number
  second: number
  /** 0 = Sunday … 6 = Saturday. */
  weekday: number
}

const WEEKDAYS: Record<string, number> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 }
const formatters = new Map<string, Intl.DateTimeFormat>()

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      weekday: 'short',
    })
    formatters.set(tz, f)
  }
  return f
}

/** True when `tz` is an IANA time zone this runtime knows. */
export function isValidTimeZone(tz: string): boolean {
  try {
    formatter(tz)
    return true
  } catch {
    return false
  }
}

/** The wall-clock time of `ms` in `tz`. */
export function localParts(ms: number, tz: string): LocalParts {
  const out: Record<string, string> = {}
  for (const p of formatter(tz).formatToParts(new Date(ms))) out[p.type] = p.value
  return {
    year: Number(out.year),
    month: Number(out.month),
    day: Number(out.day),
    hour: Number(out.hour) % 24,
    minute: Number(out.minute),
    second: Number(out.second),
    weekday: WEEKDAYS[out.weekday!] ?? 0,
  }
}

/** The offset of `tz` from UTC at instant `ms`, in milliseconds (local − UTC). */
function offsetAt(ms: number, tz: string): number {
  const p = localParts(ms, tz)
  const asUtc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second)
  return asUtc - Math.floor(ms / 1000) * 1000
}

/**
 * The instant when the wall clock in `tz` shows the given local time. A time skipped by a DST
 * jump resolves to the moment of the jump (the first instant after it); an ambiguous time
 * resolves to its first occurrence.
 */
export function zonedTime(year: number, month: number, day: number, hour: number, minute: number, tz: string): number {
  const guess = Date.UTC(year, month - 1, day, hour, minute)
  // The offsets a day either side bracket any transition on this date (zones move at most once a day).
  const before = offsetAt(guess - 86_400_000, tz)
  const after = offsetAt(guess + 86_400_000, tz)
  const shows = (t: number): boolean => {
    const p = localParts(t, tz)
    return p.year === year && p.month === month && p.day === day && p.hour === hour && p.minute === minute
  }
  const valid = [guess - before, guess - after].filter(shows).sort((a, b) => a - b)
  if (valid.length > 0) return valid[0]!
  // Skipped: find the jump between the two readings, to the minute.
  let lo = Math.min(guess - before, guess - after)
  let hi = Math.max(guess - before, guess - after)
  const offsetLo = offsetAt(lo, tz)
  while (hi - lo > 60_000) {
    const mid = lo + Math.floor((hi - lo) / 120_000) * 60_000
    if (offsetAt(mid, tz) === offsetLo) lo = mid
    else hi = mid
  }
  return hi
}

/** Adds `days` to a calendar date (no time zone involved). */
function addDays(year: number, month: number, day: number, days: number): [number, number, number] {
  const d = new Date(Date.UTC(year, month - 1, day + days))
  return [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate()]
}

/** Parses `HH:MM` into minutes after midnight. */
export function parseClock(text: string): number {
  const m = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(text)
  if (!m) throw new RangeError(`invalid time of day "${text}"`)
  return Number(m[1]) * 60 + Number(m[2])
}

/** True when `now` falls inside the quiet window; windows may cross midnight; start = end means none. */
export function inQuietHours(now: number, qh: QuietHours): boolean {
  const start = parseClock(qh.start)
  const end = parseClock(qh.end)
  if (start === end) return false
  const p = localParts(now, qh.tz)
  const m = p.hour * 60 + p.minute
  return start < end ? m >= start && m < end : m >= start || m < end
}

/** When the quiet window containing `now` ends, or null when `now` is not in quiet hours. */
export function quietHoursEnd(now: number, qh: QuietHours): number | null {
  if (!inQuietHours(now, qh)) return null
  const end = parseClock(qh.end)
  const p = localParts(now, qh.tz)
  const m = p.hour * 60 + p.minute
  const [y, mo, d] = m < end ? [p.year, p.month, p.day] : addDays(p.year, p.month, p.day, 1)
  return zonedTime(y, mo, d, Math.floor(end / 60), end % 60, qh.tz)
}

/** The end of the digest window holding `now`: the next local midnight (daily) or Monday 00:00 (weekly). */
export function digestWindowEnd(now: number, digest: 'daily' | 'weekly', tz: string): number {
  const p = localParts(now, tz)
  const days = digest === 'daily' ? 1 : (1 - p.weekday + 7) % 7 || 7
  const [y, mo, d] = addDays(p.year, p.month, p.day, days)
  return zonedTime(y, mo, d, 0, 0, tz)
}

/** Inputs of `planSend`. */
export interface PlanInput {
  now: number
  channel: 'inbox' | 'email' | 'webhook'
  severity: 'info' | 'warning' | 'critical'
  mandatory: boolean
  digest: 'none' | 'daily' | 'weekly'
  quietHours: QuietHours | null
  /** The recipient's zone for digest windows (user timezone, else the quiet-hours zone, else UTC). */
  tz: string
}

/** When a delivery goes out, and its digest window end when it is held for a digest. */
export interface Plan {
  at: number
  windowEnd: number | null
}

/**
 * When to send. The inbox is never delayed. Mandatory topics skip digests and quiet hours.
 * Email digests wait for their window end. Quiet hours then push email and webhook sends to
 * the end of the window, unless the severity is critical.
 */
export function planSend(input: PlanInput): Plan {
  const { now, channel } = input
  if (channel === 'inbox' || input.mandatory) return { at: now, windowEnd: null }
  let at = now
  let windowEnd: number | null = null
  if (channel === 'email' && input.digest !== 'none') {
    windowEnd = digestWindowEnd(now, input.digest, input.tz)
    at = windowEnd
  }
  if (input.quietHours && input.severity !== 'critical') at = quietHoursEnd(at, input.quietHours) ?? at
  return { at, windowEnd }
}
