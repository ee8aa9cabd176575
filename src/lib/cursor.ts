/** Encodes a list cursor (the last row's sort key) as an opaque base64url string. */
export function encodeCursor(key: string): string {
  return Buffer.from(key, 'utf8').toString('base64url')
}

/**
 * What a cursor may hold: a Postbox id (`key_…`, 26 characters after the prefix), an inbox
 * position (digits), a list offset (`o` + digits), or a list's sort key (`sub/…`, `tpl/…`, `app/…` or `ety/…`, see
 * encodeKeyCursor). Anything else was not handed out here. Each list then takes only its own
 * kind (decodeIdCursor, decodeOffsetCursor, decodeKeyCursor), so another list's cursor is a 400.
 */
const CURSOR_KEY = /^(?:[a-z]{2,3}_[0-9a-z]{26}|\d{1,15}|o\d{1,9}|(?:sub|tpl|app|ety|usr)\/[\s\S]{1,1000})$/
/** A Postbox id: the sort key of the lists newest first by id. */
const ID_KEY = /^[a-z]{2,3}_[0-9a-z]{26}$/

/** The longest cursor accepted: a subscription's sort key holds a 200-character topic and a principal. */
export const MAX_CURSOR_LENGTH = 1400

/** Decodes a cursor made by `encodeCursor`; null when it is malformed or was never handed out. */
export function decodeCursor(cursor: string | undefined | null): string | null {
  if (!cursor) return null
  if (cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) return null
  const key = Buffer.from(cursor, 'base64url').toString('utf8')
  return CURSOR_KEY.test(key) ? key : null
}

/**
 * The id in a cursor of a list read by id (deliveries, events, endpoints, keys); null for any
 * other cursor, and with `prefix` (`dlv`, `evt`…) for another list's id: a delivery cursor
 * given to the events list would otherwise read as an empty last page.
 */
export function decodeIdCursor(cursor: string | undefined | null, prefix?: string): string | null {
  const key = decodeCursor(cursor)
  return key !== null && ID_KEY.test(key) && (prefix === undefined || key.startsWith(`${prefix}_`)) ? key : null
}

/** The key in an inbox cursor: a position (digits), or a message id (cursors made before v3); null for any other cursor. */
export function decodeInboxCursor(cursor: string | undefined | null): string | null {
  const key = decodeCursor(cursor)
  return key !== null && (/^\d{1,15}$/.test(key) || /^msg_[0-9a-z]{26}$/.test(key)) ? key : null
}

/** Rows per page when a list call gives no limit. */
export const DEFAULT_PAGE_SIZE = 50
/** The largest page a list returns. */
export const MAX_PAGE_SIZE = 200

/** A requested page size bounded to 1..MAX_PAGE_SIZE; DEFAULT_PAGE_SIZE when none is given. */
export function pageSize(limit?: number): number {
  return Math.min(Math.max(limit ?? DEFAULT_PAGE_SIZE, 1), MAX_PAGE_SIZE)
}

/** One page of a newest-first list. */
export interface Page<T> {
  data: T[]
  next_cursor: string | null
}

/** Cuts `limit + 1` rows read newest first by id into a page whose cursor is its last row's id. */
export function pageById<T extends { id: string }>(rows: T[], limit: number): Page<T> {
  if (rows.length <= limit) return { data: rows, next_cursor: null }
  const data = rows.slice(0, limit)
  return { data, next_cursor: encodeCursor(data[limit - 1]!.id) }
}

/** A cursor for lists read by position (small configuration lists): the number of rows already returned. */
export function encodeOffsetCursor(offset: number): string {
  return encodeCursor(`o${offset}`)
}

/** The position in a cursor made by `encodeOffsetCursor`; null when it is not one. */
export function decodeOffsetCursor(cursor: string | undefined | null): number | null {
  const m = /^o(\d{1,9})$/.exec(decodeCursor(cursor) ?? '')
  return m ? Number(m[1]) : null
}

/**
 * A cursor holding the sort key of a list's last row, for lists ordered by more than an id:
 * `tag/field/…/last`. The tag names the list, so another list's cursor is refused; no field but
 * the last may contain `/`.
 */
export function encodeKeyCursor(tag: string, fields: readonly (string | number)[]): string {
  return encodeCursor(`${tag}/${fields.join('/')}`)
}

/** The `count` fields of a cursor made by `encodeKeyCursor` with `tag`; null when it is not one. */
export function decodeKeyCursor(cursor: string | undefined | null, tag: string, count: number): string[] | null {
  const key = decodeCursor(cursor)
  if (key === null || !key.startsWith(`${tag}/`)) return null
  const parts = key.slice(tag.length + 1).split('/')
  if (parts.length < count) return null
  return [...parts.slice(0, count - 1), parts.slice(count - 1).join('/')]
}
