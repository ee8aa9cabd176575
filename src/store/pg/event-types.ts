import { decodeKeyCursor, encodeKeyCursor } from '../../lib/cursor.js'
import type { Async } from '../contract.js'
import { EVENT_TYPE_CURSOR_TAG, type EventTypeRow, type EventTypesStore } from '../event-types.js'
import type { PgQueryable } from './queryable.js'

const COLUMNS = `name, description, schema, example, deprecated, archived, version, created_at AS "createdAt", updated_at AS "updatedAt"`
/** The tag of the catalog list's cursor (as src/store/event-types.ts). */

const SQL = {
  upsert: `INSERT INTO event_types (name, description, schema, example, deprecated, archived, version, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $7)
    ON CONFLICT (name) DO UPDATE SET description = excluded.description, schema = excluded.schema, example = excluded.example,
      deprecated = excluded.deprecated, archived = excluded.archived, version = event_types.version + 1, updated_at = excluded.updated_at
    RETURNING ${COLUMNS}`,
  get: `SELECT ${COLUMNS} FROM event_types WHERE name = $1`,
  all: `SELECT ${COLUMNS} FROM event_types ORDER BY name`,
  // Rows are never deleted and every put moves a row's version (or adds a row), so this sum moves on every commit.
  stamp: `SELECT coalesce(sum(version), 0) + count(*) AS stamp FROM event_types`,
} as const

type Raw = Omit<EventTypeRow, 'schema' | 'example' | 'deprecated' | 'archived'> & { schema: string | null; example: string | null; deprecated: number; archived: number }

const mapRow = (r: Raw): EventTypeRow => ({
  ...r,
  schema: r.schema === null ? null : (JSON.parse(r.schema) as EventTypeRow['schema']),
  example: r.example === null ? null : (JSON.parse(r.example) as Record<string, unknown>),
  deprecated: r.deprecated === 1,
  archived: r.archived === 1,
})

/** How often `version()` looks for other nodes' commits (as SQLite's for other connections). */
const FOREIGN_CHECK_MS = 1000

/** What `version()` remembers; one per store, shared by the families made for its transactions. */
export interface PgEventTypesState {
  version: number
  stamp: number | null
  checkedAt: number
  checking: Promise<void> | null
}

/** A fresh `PgEventTypesState`. */
export const newPgEventTypesState = (): PgEventTypesState => ({ version: 0, stamp: null, checkedAt: -Infinity, checking: null })

/**
 * The event_types table on PostgreSQL (EventTypesStore, src/store/event-types.ts). `version()`
 * moves at once on a put through this store and, as on SQLite, within a second of another
 * node's: at most one query a second, so the ingest check that calls it per event costs no round trip.
 */
export function createPgEventTypesStore(q: PgQueryable, st: PgEventTypesState = newPgEventTypesState()): Async<EventTypesStore> {
  const check = async (): Promise<void> => {
    const s = (await q.query<{ stamp: number }>(SQL.stamp)).rows[0]!.stamp
    if (st.stamp !== null && s !== st.stamp) st.version++
    st.stamp = s
  }
  return {
    async put(row, now) {
      st.version++
      const { rows } = await q.query<Raw>(SQL.upsert, [
        row.name,
        row.description,
        row.schema === null ? null : JSON.stringify(row.schema),
        row.example === null ? null : JSON.stringify(row.example),
        row.deprecated ? 1 : 0,
        row.archived ? 1 : 0,
        now,
      ])
      return mapRow(rows[0]!)
    },
    get: async (name) => {
      const r = (await q.query<Raw>(SQL.get, [name])).rows[0]
      return r ? mapRow(r) : null
    },
    all: async () => (await q.query<Raw>(SQL.all)).rows.map(mapRow),
    async list({ limit, cursor, includeArchived }) {
      const after = cursor ? (decodeKeyCursor(cursor, EVENT_TYPE_CURSOR_TAG, 1)?.[0] ?? null) : null
      const args: unknown[] = []
      const where: string[] = []
      if (after !== null) where.push(`name > $${args.push(after)}`)
      if (!includeArchived) where.push('archived = 0')
      const sql = `SELECT ${COLUMNS} FROM event_types ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY name LIMIT $${args.push(limit + 1)}`
      const rows = (await q.query<Raw>(sql, args)).rows.map(mapRow)
      const data = rows.slice(0, limit)
      return { data, next_cursor: rows.length > limit ? encodeKeyCursor(EVENT_TYPE_CURSOR_TAG, [data[limit - 1]!.name]) : null }
    },
    async version() {
      const t = performance.now()
      if (t - st.checkedAt >= FOREIGN_CHECK_MS) {
        st.checkedAt = t
        st.checking ??= check().finally(() => (st.checking = null))
      }
      if (st.checking) await st.checking
      return st.version
    },
  }
}
