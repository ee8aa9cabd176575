import { prepareAll, statementCache, type Db } from './db.js'
import { decodeKeyCursor, encodeKeyCursor } from '../../lib/cursor.js'
import { EVENT_TYPE_CURSOR_TAG, type EventTypeRow, type EventTypesStore } from '../event-types.js'

const COLUMNS = `name, description, schema, example, deprecated, archived, version, created_at AS createdAt, updated_at AS updatedAt`
/** The tag of the catalog list's cursor (by name). */

const SQL = {
  upsert: `INSERT INTO event_types (name, description, schema, example, deprecated, archived, version, created_at, updated_at)
      VALUES (@name, @description, @schema, @example, @deprecated, @archived, 1, @now, @now)
    ON CONFLICT (name) DO UPDATE SET description = excluded.description, schema = excluded.schema, example = excluded.example,
      deprecated = excluded.deprecated, archived = excluded.archived, version = event_types.version + 1, updated_at = excluded.updated_at
    RETURNING ${COLUMNS}`,
  get: `SELECT ${COLUMNS} FROM event_types WHERE name = ?`,
  all: `SELECT ${COLUMNS} FROM event_types ORDER BY name`,
} as const

type Raw = Omit<EventTypeRow, 'schema' | 'example' | 'deprecated' | 'archived'> & { schema: string | null; example: string | null; deprecated: number; archived: number }

const mapRow = (r: Raw | undefined): EventTypeRow | null =>
  r
    ? {
        ...r,
        schema: r.schema === null ? null : (JSON.parse(r.schema) as EventTypeRow['schema']),
        example: r.example === null ? null : (JSON.parse(r.example) as Record<string, unknown>),
        deprecated: r.deprecated === 1,
        archived: r.archived === 1,
      }
    : null

/** How often `version()` looks for commits by other connections. */
const FOREIGN_CHECK_MS = 1000

/** Creates the event-types store over a connection. */
export function createEventTypesStore(db: Db): EventTypesStore {
  const s = prepareAll(db, SQL)
  const listStatement = statementCache(db)
  const dataVersion = db.prepare('PRAGMA data_version').pluck()
  let seen = dataVersion.get()
  let checkedAt = performance.now()
  let version = 0
  return {
    put(row, now) {
      version++
      const raw = s.upsert.get({
        name: row.name,
        description: row.description,
        schema: row.schema === null ? null : JSON.stringify(row.schema),
        example: row.example === null ? null : JSON.stringify(row.example),
        deprecated: row.deprecated ? 1 : 0,
        archived: row.archived ? 1 : 0,
        now,
      }) as Raw
      return mapRow(raw)!
    },
    get: (name) => mapRow(s.get.get(name) as Raw | undefined),
    all: () => (s.all.all() as Raw[]).map((r) => mapRow(r)!),
    list({ limit, cursor, includeArchived }) {
      const after = cursor ? decodeKeyCursor(cursor, EVENT_TYPE_CURSOR_TAG, 1)?.[0] ?? null : null
      const where = [after !== null ? 'name > ?' : '', includeArchived ? '' : 'archived = 0'].filter(Boolean)
      const sql = `SELECT ${COLUMNS} FROM event_types ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY name LIMIT ?`
      const rows = (listStatement(sql).all(...(after !== null ? [after] : []), limit + 1) as Raw[]).map((r) => mapRow(r)!)
      const data = rows.slice(0, limit)
      return { data, next_cursor: rows.length > limit ? encodeKeyCursor(EVENT_TYPE_CURSOR_TAG, [data[limit - 1]!.name]) : null }
    },
    version() {
      const t = performance.now()
      if (t - checkedAt >= FOREIGN_CHECK_MS) {
        checkedAt = t
        const dv = dataVersion.get()
        if (dv !== seen) {
          seen = dv
          version++
        }
      }
      return version
    },
  }
}
