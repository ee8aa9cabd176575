import { type Page } from '../lib/cursor.js'
/** A stored event, mapped to camelCase. */
export interface EventRow {
  id: string
  /** The application the event was posted to. */
  appId: string
  clientId: string | null
  type: string
  orderingKey: string | null
  body: string
  createdAt: number
}

/** The events table: inserts and lookups. */
export interface EventsStore {
  /** Inserts an event (of `default` when `appId` is not given). */
  insert(row: Omit<EventRow, 'appId'> & { appId?: string }): void
  /** Inserts several events as `insert` does each, all or none (PostgreSQL: one statement). */
  insertMany(rows: readonly (Omit<EventRow, 'appId'> & { appId?: string })[]): void
  get(id: string): EventRow | null
  /** The event an application's client id names. */
  byClientId(appId: string, clientId: string): EventRow | null
  /** `byClientId` of each (application, client id), in input order (PostgreSQL: one statement). */
  byClientIds(keys: readonly { appId: string; clientId: string }[]): (EventRow | null)[]
  list(opts: { limit: number; cursor?: string | null; type?: string; appId?: string }): Page<EventRow>
}
