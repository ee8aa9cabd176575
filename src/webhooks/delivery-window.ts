import { errors } from '../errors.js'
import { decodeIdCursor, encodeCursor, type Page } from '../lib/cursor.js'
import { idFloor } from '../lib/ids.js'

/**
 * A creation-time window of the deliveries list, `[since, until)`. A delivery id begins with
 * its creation time in ms (src/lib/ids.ts), and the list reads newest first by id, so the
 * window needs no store filter: `until` is where the reading starts (a cursor), and `since`
 * is where it stops (the page that crosses it is the last).
 */
export interface DeliveryWindow {
  /** Ids at or above this were created at or after `since`. */
  floor: string | null
  /** The cursor to read from: the caller's, or the first id at `until` when that is older. */
  cursor: string | null
}

const ms = (field: 'since' | 'until', iso: string): number => {
  const t = Date.parse(iso)
  if (Number.isNaN(t)) throw errors.validation([{ field, message: 'must be an ISO 8601 time', in: 'query' }])
  return t
}

/** The window of `since`/`until` (ISO 8601) over a list read from `cursor`. */
export function deliveryWindow(f: { since?: string; until?: string; cursor?: string | null }): DeliveryWindow {
  const since = f.since === undefined ? null : ms('since', f.since)
  const until = f.until === undefined ? null : ms('until', f.until)
  if (since !== null && until !== null && since >= until) throw errors.validation([{ field: 'since', message: 'must be before until', in: 'query' }])
  let cursor = f.cursor ?? null
  if (until !== null) {
    const start = idFloor('dlv', until)
    const given = decodeIdCursor(cursor, 'dlv')
    if (given === null || given > start) cursor = encodeCursor(start)
  }
  return { floor: since === null ? null : idFloor('dlv', since), cursor }
}

/** How many rows to read for a page of `limit`: one more with `since`, to tell whether a next page is left. */
export function readLimit(w: DeliveryWindow, limit: number): number {
  return w.floor === null ? limit : limit + 1
}

/**
 * Cuts a page read through `deliveryWindow` (with `readLimit` rows) at `since`: older rows
 * dropped, and a next page only when a row at or after `since` is left for it.
 */
export function cutAtSince<T extends { id: string }>(page: Page<T>, w: DeliveryWindow, limit: number): Page<T> {
  const floor = w.floor
  if (floor === null) return page
  const kept = page.data.filter((d) => d.id >= floor)
  if (kept.length < page.data.length) return { data: kept.slice(0, limit), next_cursor: null }
  if (kept.length > limit) return { data: kept.slice(0, limit), next_cursor: encodeCursor(kept[limit - 1]!.id) }
  // A short page (a capped scan's) may go on: only while its cursor is still inside the window.
  const next = decodeIdCursor(page.next_cursor, 'dlv')
  return { data: kept, next_cursor: next !== null && next >= floor ? page.next_cursor : null }
}
