/**
 * Strict ISO 8601 times. `Date.parse` rolls an impossible date over (`2026-02-30` is March 2)
 * and takes many other shapes; a time given to the API is checked against the calendar first.
 */

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-](\d{2}):(\d{2}))$/

/** True when `text` is `YYYY-MM-DDTHH:MM[:SS[.fff]]` with a zone and names a real calendar day and time of day. */
export function isCalendarTime(text: string): boolean {
  const m = ISO_TIME.exec(text)
  if (!m) return false
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? '0'].map(Number) as [number, number, number, number, number, number]
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return false
  if (m[7] !== 'Z' && (Number(m[8]) > 23 || Number(m[9]) > 59)) return false
  // Day 0 of the next month is the last day of this one (leap years included).
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate()
}

/** Epoch ms of a strict ISO 8601 time (isCalendarTime), or null. */
export function parseIsoTime(text: string): number | null {
  if (!isCalendarTime(text)) return null
  const t = Date.parse(text)
  return Number.isNaN(t) ? null : t
}
