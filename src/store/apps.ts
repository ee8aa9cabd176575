import { decodeKeyCursor, type Page } from '../lib/cursor.js'

/** The tag of this family's list cursors (lib/cursor.ts), the same on both backends. */
export const APP_CURSOR_TAG = 'app'
/** The application every database has; rows written without an app_id belong to it. */
export const DEFAULT_APP = 'default'

/** An application (tenant) row, mapped to camelCase with its metadata parsed. */
export interface AppRow {
  id: string
  name: string
  metadata: Record<string, unknown>
  createdAt: number
  updatedAt: number
}

/** A stored portal token: the signed token names this row, and deleting the row revokes it. */
export interface PortalTokenRow {
  id: string
  appId: string
  readOnly: boolean
  expiresAt: number
  createdAt: number
}

/** Counts shown with one application. */
export interface AppCounts {
  endpoints: number
  deliveries: Record<'pending' | 'in_flight' | 'success' | 'dead' | 'cancelled', number>
}

/** The apps table and the portal tokens stored with each application. */
export interface AppsStore {
  /** Inserts an application; false when the id exists (or existed: deleted ids are never reused). */
  insert(row: { id: string; name: string; metadata: Record<string, unknown> }, now: number): boolean
  /** A live application, or null. */
  get(id: string): AppRow | null
  /** True when the application exists and is not deleted; remembered, so ingest pays no query per event. */
  exists(id: string): boolean
  update(id: string, patch: { name: string; metadata: Record<string, unknown> }, now: number): boolean
  /** Marks the application deleted, deletes its portal tokens and revokes its scoped keys. */
  softDelete(id: string, now: number): boolean
  /** Live applications, newest first. */
  list(opts: { limit: number; cursor?: string | null }): Page<AppRow>
  /** Live endpoints and deliveries by status of one application. */
  counts(id: string): AppCounts
  /** Deliveries by application and status (reads the whole table: for `postbox stats`, not for every scrape). */
  countsByApp(): { appId: string; status: string; n: number }[]
  /** Pending and in-flight deliveries of the `limit` applications with the most, from the queue's indexes (for metrics). */
  queuedByApp(limit: number): { appId: string; status: 'pending' | 'in_flight'; n: number }[]
  insertPortalToken(row: PortalTokenRow): void
  getPortalToken(id: string): PortalTokenRow | null
}

/** True for a cursor of the apps list. */
export function isAppCursor(cursor: string): boolean {
  const k = decodeKeyCursor(cursor, APP_CURSOR_TAG, 2)
  return k !== null && /^\d{1,15}$/.test(k[0]!)
}
