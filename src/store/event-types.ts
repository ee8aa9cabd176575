import { decodeKeyCursor, type Page } from '../lib/cursor.js'

/** The tag of this family's list cursors (lib/cursor.ts), the same on both backends. */
export const EVENT_TYPE_CURSOR_TAG = 'ety'
/** One entry of the event-type catalog, mapped to camelCase with its JSON parsed. */
export interface EventTypeRow {
  name: string
  description: string
  /** A JSON Schema (draft 2020-12) for the event's `data`, or null for none. */
  schema: Record<string, unknown> | boolean | null
  /** An example `data` (satisfies the schema), or null. */
  example: Record<string, unknown> | null
  deprecated: boolean
  archived: boolean
  /** Moves on every PUT; compiled validators are cached by (name, version). */
  version: number
  createdAt: number
  updatedAt: number
}

/** The event_types table: the catalog. */
export interface EventTypesStore {
  /** Creates or replaces a type (its version moves); returns the stored row. */
  put(row: Omit<EventTypeRow, 'version' | 'createdAt' | 'updatedAt'>, now: number): EventTypeRow
  get(name: string): EventTypeRow | null
  /** Types by name; archived ones only with `includeArchived`. */
  list(opts: { limit: number; cursor?: string | null; includeArchived: boolean }): Page<EventTypeRow>
  /** Every type, by name (the ingest check's cache; the catalog is small). */
  all(): EventTypeRow[]
  /** Moves on every put through this store, and within a second of another connection's commit. */
  version(): number
}

/** True for a cursor of the catalog list. */
export function isEventTypeCursor(cursor: string): boolean {
  return decodeKeyCursor(cursor, EVENT_TYPE_CURSOR_TAG, 1) !== null
}
