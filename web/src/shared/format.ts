/** "3 min ago", "in 2 h": a short relative time for an ISO timestamp. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—'
  const t = Date.parse(iso)
  if (Number.isNaN(t)) return iso
  return duration(Math.abs(now - t) / 1000) + (t <= now ? ' ago' : ' from now')
}

/** 42 s, 3 min, 5 h, 2 d. */
export function duration(seconds: number): string {
  if (seconds < 60) return `${Math.round(seconds)} s`
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`
  if (seconds < 86_400) return `${Math.round(seconds / 360) / 10} h`
  return `${Math.round(seconds / 8640) / 10} d`
}

/** A local date and time for an ISO timestamp. */
export function when(iso: string | null | undefined): string {
  if (!iso) return '—'
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString()
}

/** Pretty JSON, or the text as is when it is not JSON. */
export function pretty(value: unknown): string {
  if (typeof value === 'string') {
    try {
      return JSON.stringify(JSON.parse(value), null, 2)
    } catch {
      return value
    }
  }
  return JSON.stringify(value, null, 2)
}

/** A comma list typed by a person, as a list (empty items dropped). */
export const splitList = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)

/** A `datetime-local` value ("2026-12-07T10:30", local time) as ISO 8601; undefined when blank or invalid. */
export function localToIso(local: string | null | undefined): string | undefined {
  if (!local) return undefined
  const t = new Date(local).getTime()
  return Number.isNaN(t) ? undefined : new Date(t).toISOString()
}

/** The statuses after which a delivery is never attempted again (unless redelivered by hand). */
const FINAL = new Set(['success', 'dead', 'cancelled'])

/**
 * A delivery's attempts for a person: "2 / 8" while it may be tried again, the count alone once
 * it succeeded, "1 (final)" when it failed for good or was cancelled (a 4xx answer ends it at
 * once, whatever the maximum).
 */
export function attemptsText(d: { status: string; attempt_count: number; max_attempts: number }): string {
  if (!FINAL.has(d.status)) return `${d.attempt_count} / ${d.max_attempts}`
  return d.status === 'success' ? String(d.attempt_count) : `${d.attempt_count} (final)`
}
