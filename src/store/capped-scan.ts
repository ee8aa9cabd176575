/**
 * Rows one list page may read through a filter no index serves (a delivery's event type or
 * success status, an inbox message's topic), at most. Such a page can hold fewer than `limit`
 * items, even none, with a `next_cursor` that continues where the read stopped: a rare value in a
 * long history costs the client more pages instead of holding the event loop (and every
 * delivery) for the whole walk. Reading 10,000 deliveries by id order took ~11 ms (2 vCPUs).
 */
export const LIST_SCAN_LIMIT = 10_000

/** What `scanForPage` found: the matching keys, and where the next page starts when the read was cut short. */
export interface ScannedPage<K> {
  /** Keys of the matching rows, newest first, at most `limit + 1` (one more means another page follows). */
  hits: K[]
  /** The last key read when LIST_SCAN_LIMIT rows were read before `limit + 1` matched; null otherwise. */
  resumeAfter: K | null
}

/** The LIMIT of a capped scan's statement: one row more than it reads, to know whether more follow. */
export const SCAN_STATEMENT_LIMIT = LIST_SCAN_LIMIT + 1

/**
 * Steps through `rows` ([key, matches] pairs, newest first, from a statement limited to
 * SCAN_STATEMENT_LIMIT rows) until `limit + 1` rows match, LIST_SCAN_LIMIT rows were read with
 * more to come, or the rows run out (then no cursor: no empty page after exactly the cap).
 */
export function scanForPage<K>(rows: Iterable<readonly [K, number]>, limit: number): ScannedPage<K> {
  const hits: K[] = []
  let read = 0
  let last: K | null = null
  for (const [key, hit] of rows) {
    if (read === LIST_SCAN_LIMIT) return { hits, resumeAfter: last }
    read++
    last = key
    if (hit && hits.push(key) > limit) return { hits, resumeAfter: null }
  }
  return { hits, resumeAfter: null }
}
