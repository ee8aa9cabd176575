import { decodeKeyCursor, encodeKeyCursor } from '../../lib/cursor.js'
import { APP_CURSOR_TAG, DEFAULT_APP, type AppCounts, type AppRow, type AppsStore, type PortalTokenRow } from '../apps.js'
import type { Async } from '../contract.js'
import type { PgQueryable } from './queryable.js'

const COLUMNS = `id, name, metadata, created_at AS "createdAt", updated_at AS "updatedAt"`
/** The tag of the apps list's cursor (as src/store/apps.ts). */

const SQL = {
  insert: `INSERT INTO apps (id, name, metadata, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) ON CONFLICT (id) DO NOTHING`,
  get: `SELECT ${COLUMNS} FROM apps WHERE id = $1 AND deleted_at IS NULL`,
  exists: `SELECT 1 FROM apps WHERE id = $1 AND deleted_at IS NULL`,
  update: `UPDATE apps SET name = $2, metadata = $3, updated_at = $4 WHERE id = $1 AND deleted_at IS NULL`,
  // One statement, so the application, its tokens and its scoped keys go together without a transaction.
  softDelete: `WITH d AS (UPDATE apps SET deleted_at = $2, updated_at = $2 WHERE id = $1 AND deleted_at IS NULL RETURNING id),
      t AS (DELETE FROM portal_tokens WHERE app_id IN (SELECT id FROM d)),
      k AS (UPDATE api_keys SET revoked_at = $2 WHERE app_id IN (SELECT id FROM d) AND revoked_at IS NULL)
    SELECT count(*) AS n FROM d`,
  listFirst: `SELECT ${COLUMNS} FROM apps WHERE deleted_at IS NULL ORDER BY created_at DESC, id DESC LIMIT $1`,
  listAfter: `SELECT ${COLUMNS} FROM apps WHERE deleted_at IS NULL AND (created_at, id) < ($1, $2)
    ORDER BY created_at DESC, id DESC LIMIT $3`,
  countEndpoints: `SELECT count(*) AS n FROM endpoints WHERE app_id = $1 AND deleted_at IS NULL`,
  countDeliveries: `SELECT status, count(*) AS n FROM deliveries WHERE app_id = $1 GROUP BY status`,
  deliveriesByApp: `SELECT app_id AS "appId", status, count(*) AS n FROM deliveries GROUP BY app_id, status ORDER BY app_id, status`,
  // Through the queue's partial indexes (status = 'pending' / 'in_flight'), as on SQLite.
  queuedByApp: `(SELECT app_id AS "appId", 'pending' AS status, count(*) AS n FROM deliveries WHERE status = 'pending'
      GROUP BY app_id ORDER BY n DESC, app_id LIMIT $1)
    UNION ALL
    (SELECT app_id AS "appId", 'in_flight' AS status, count(*) AS n FROM deliveries WHERE status = 'in_flight'
      GROUP BY app_id ORDER BY n DESC, app_id LIMIT $1)`,
  // The application's expired tokens go as a new one is stored: one statement.
  insertToken: `WITH x AS (DELETE FROM portal_tokens WHERE app_id = $2 AND expires_at <= $5)
    INSERT INTO portal_tokens (id, app_id, read_only, expires_at, created_at) VALUES ($1, $2, $3, $4, $5)`,
  getToken: `SELECT id, app_id AS "appId", read_only AS "readOnly", expires_at AS "expiresAt", created_at AS "createdAt" FROM portal_tokens WHERE id = $1`,
} as const

type RawApp = Omit<AppRow, 'metadata'> & { metadata: string }

const mapApp = (r: RawApp): AppRow => ({ ...r, metadata: JSON.parse(r.metadata) as Record<string, unknown> })

/** What `exists()` remembers; one per store, shared by the families made for its transactions. */
export interface PgAppsState {
  /** Live application ids and when each was last confirmed (performance.now()). */
  known: Map<string, number>
}

/** A fresh `PgAppsState`. */
export const newPgAppsState = (): PgAppsState => ({ known: new Map() })

/**
 * How long `exists()` trusts a confirmed id. On SQLite only this process deletes applications, so
 * the cache is exact; on PostgreSQL another node's API may delete one, and this node then accepts
 * events for it for at most this long (as it would for a request already under way when the delete came).
 */
export const PG_APP_EXISTS_TTL_MS = 1000
const KNOWN_MAX = 100_000

/** The apps and portal_tokens tables on PostgreSQL (AppsStore, src/store/apps.ts). */
export function createPgAppsStore(q: PgQueryable, st: PgAppsState = newPgAppsState()): Async<AppsStore> {
  return {
    insert: async (row, now) => ((await q.query(SQL.insert, [row.id, row.name, JSON.stringify(row.metadata), now])).rowCount ?? 0) > 0,
    async get(id) {
      const r = (await q.query<RawApp>(SQL.get, [id])).rows[0]
      return r ? mapApp(r) : null
    },
    async exists(id) {
      if (id === DEFAULT_APP) return true
      const t = performance.now()
      const seen = st.known.get(id)
      if (seen !== undefined && t - seen < PG_APP_EXISTS_TTL_MS) return true
      const found = (await q.query(SQL.exists, [id])).rows.length > 0
      if (found) {
        if (st.known.size >= KNOWN_MAX) st.known.clear()
        st.known.set(id, t)
      } else st.known.delete(id)
      return found
    },
    update: async (id, p, now) => ((await q.query(SQL.update, [id, p.name, JSON.stringify(p.metadata), now])).rowCount ?? 0) > 0,
    async softDelete(id, now) {
      st.known.delete(id)
      return (await q.query<{ n: number }>(SQL.softDelete, [id, now])).rows[0]!.n > 0
    },
    async list({ limit, cursor }) {
      const after = cursor ? decodeKeyCursor(cursor, APP_CURSOR_TAG, 2) : null
      const { rows } = after ? await q.query<RawApp>(SQL.listAfter, [Number(after[0]), after[1], limit + 1]) : await q.query<RawApp>(SQL.listFirst, [limit + 1])
      const data = rows.slice(0, limit).map(mapApp)
      const last = data[data.length - 1]
      return { data, next_cursor: rows.length > limit && last ? encodeKeyCursor(APP_CURSOR_TAG, [last.createdAt, last.id]) : null }
    },
    async counts(id) {
      const deliveries: AppCounts['deliveries'] = { pending: 0, in_flight: 0, success: 0, dead: 0, cancelled: 0 }
      const [d, e] = await Promise.all([
        q.query<{ status: keyof typeof deliveries; n: number }>(SQL.countDeliveries, [id]),
        q.query<{ n: number }>(SQL.countEndpoints, [id]),
      ])
      for (const r of d.rows) deliveries[r.status] = r.n
      return { endpoints: e.rows[0]!.n, deliveries }
    },
    countsByApp: async () => (await q.query<{ appId: string; status: string; n: number }>(SQL.deliveriesByApp)).rows,
    queuedByApp: async (limit) => (await q.query<{ appId: string; status: 'pending' | 'in_flight'; n: number }>(SQL.queuedByApp, [limit])).rows,
    async insertPortalToken(row) {
      await q.query(SQL.insertToken, [row.id, row.appId, row.readOnly ? 1 : 0, row.expiresAt, row.createdAt])
    },
    async getPortalToken(id) {
      const r = (await q.query<Omit<PortalTokenRow, 'readOnly'> & { readOnly: number }>(SQL.getToken, [id])).rows[0]
      return r ? { ...r, readOnly: r.readOnly === 1 } : null
    },
  }
}
