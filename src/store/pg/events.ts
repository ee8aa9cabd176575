/** The events table on PostgreSQL: the `Async<EventsStore>` of src/store/events.ts. */
import type { Async } from '../contract.js'
import type { EventRow, EventsStore } from '../events.js'
import { decodeIdCursor, pageById } from '../../lib/cursor.js'
import { quoteAliases } from './atomic.js'
import type { PgQueryable } from './queryable.js'

const COLUMNS = quoteAliases(`id, app_id AS appId, client_id AS clientId, type, ordering_key AS orderingKey, body, created_at AS createdAt`)

const SQL = {
  insert: `INSERT INTO events (id, app_id, client_id, type, ordering_key, body, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
  insertMany: `INSERT INTO events (id, app_id, client_id, type, ordering_key, body, created_at)
    SELECT id, app_id, client_id, type, ordering_key, body, created_at
      FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[]) WITH ORDINALITY
        AS t(id, app_id, client_id, type, ordering_key, body, created_at, n)
      ORDER BY n`,
  get: `SELECT ${COLUMNS} FROM events WHERE id = $1`,
  byClientId: `SELECT ${COLUMNS} FROM events WHERE app_id = $1 AND client_id = $2`,
  byClientIds: `SELECT ${COLUMNS} FROM events WHERE (app_id, client_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
} as const

/** Creates the events family over `q` (the pool, or a transaction's client). */
export function createPgEventsStore(q: PgQueryable): Async<EventsStore> {
  return {
    async insert(row) {
      await q.query(SQL.insert, [row.id, row.appId ?? 'default', row.clientId, row.type, row.orderingKey, row.body, row.createdAt])
    },
    async insertMany(rows) {
      if (rows.length === 0) return
      await q.query(SQL.insertMany, [
        rows.map((r) => r.id),
        rows.map((r) => r.appId ?? 'default'),
        rows.map((r) => r.clientId),
        rows.map((r) => r.type),
        rows.map((r) => r.orderingKey),
        rows.map((r) => r.body),
        rows.map((r) => r.createdAt),
      ])
    },
    get: async (id) => (await q.query<EventRow>(SQL.get, [id])).rows[0] ?? null,
    byClientId: async (appId, clientId) => (await q.query<EventRow>(SQL.byClientId, [appId, clientId])).rows[0] ?? null,
    async byClientIds(keys) {
      if (keys.length === 0) return []
      const { rows } = await q.query<EventRow>(SQL.byClientIds, [keys.map((k) => k.appId), keys.map((k) => k.clientId)])
      const found = new Map(rows.map((r) => [`${r.appId}\0${r.clientId}`, r]))
      return keys.map((k) => found.get(`${k.appId}\0${k.clientId}`) ?? null)
    },
    async list({ limit, cursor, type, appId }) {
      const where: string[] = []
      const params: unknown[] = []
      if (appId !== undefined) where.push(`app_id = $${params.push(appId)}`)
      const after = decodeIdCursor(cursor)
      if (after) where.push(`id < $${params.push(after)}`)
      if (type) where.push(`type = $${params.push(type)}`)
      const sql = `SELECT ${COLUMNS} FROM events ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY id DESC LIMIT $${params.push(limit + 1)}`
      return pageById((await q.query<EventRow>(sql, params)).rows, limit)
    },
  }
}
