const UNITS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
}

/**
 * Parses a duration such as `500ms`, `2s`, `1m`, `6h` or `7d` into milliseconds.
 * A bare number is milliseconds. Returns null for anything else.
 */
export function parseDuration(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text)
  if (!m) return null
  const value = Number(m[1]) * UNITS[m[2] ?? 'ms']!
  return Number.isFinite(value) ? Math.round(value) : null
}

/** Parses a comma list of durations (`500ms,2s,1m`); null if any item is invalid or the list is empty. */
export function parseDurationList(text: string): number[] | null {
  const parts = text.split(',').map((p) => p.trim()).filter((p) => p.length > 0)
  if (parts.length === 0) return null
  const out: number[] = []
  for (const p of parts) {
    const ms = parseDuration(p)
    if (ms === null || ms < 0) return null
    out.push(ms)
  }
  return out
}

/** Formats milliseconds compactly (`1500` → `1.5s`), for logs and docs. */
export function formatDuration(ms: number): string {
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) {
    if (ms >= size) return `${+(ms / size).toFixed(2)}${unit}`
  }
  return `${ms}ms`
}
