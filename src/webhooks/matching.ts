/** Operational events Postbox publishes about itself start with this prefix. */
export const OPERATIONAL_PREFIX = 'postbox.'

/** True when `pattern` (an exact type, `*`, or a prefix wildcard like `invoice.*`) matches `type`. */
export function patternMatches(pattern: string, type: string): boolean {
  if (pattern === '*') return true
  if (pattern.endsWith('*')) return type.startsWith(pattern.slice(0, -1))
  return pattern === type
}

/**
 * True when an endpoint with filter `patterns` (null = every type) should receive `type`.
 * Operational `postbox.*` events are opt-in: only a pattern that names them (an exact type or a
 * prefix starting with `postbox.`) matches, never `*` or an absent filter, so a catch-all
 * endpoint does not start receiving Postbox's own events.
 */
export function endpointWants(patterns: readonly string[] | null, type: string): boolean {
  if (type.startsWith(OPERATIONAL_PREFIX)) {
    return patterns !== null && patterns.some((p) => p.startsWith(OPERATIONAL_PREFIX) && patternMatches(p, type))
  }
  return patterns === null || patterns.some((p) => patternMatches(p, type))
}
