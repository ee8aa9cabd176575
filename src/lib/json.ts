/** Parses JSON, returning `fallback` when the text is null or invalid. */
export function parseJsonOr<T>(text: string | null | undefined, fallback: T): T {
  if (text === null || text === undefined) return fallback
  try {
    return JSON.parse(text) as T
  } catch {
    return fallback
  }
}

/** True for a plain JSON object (not null, not an array). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
