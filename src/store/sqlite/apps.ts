import { prepareAll, type Db } from './db.js'
import { decodeKeyCursor, encodeKeyCursor } from '../../lib/cursor.js'
import { APP_CURSOR_TAG, DEFAULT_APP, type AppRow, type AppsStore, type PortalTokenRow } from '../apps.js'

const COLUMNS = `id, name, metadata, created_at AS createdAt, updated_at AS updatedAt`
/** The tag of the apps list's cursor (newest first: created_at, then id). */

const SQL = {
  insert: `INSERT INTO apps (id, name, metadata, created_at, updated_at) VALUES (@id, @name, @metadata, @now, @now)
    ON CONFLICT (id) DO NOTHING`,
  get: `SELECT ${COLUMNS} FROM apps WHERE id = ? AND deleted_at IS NULL`,
  exists: `SELECT 1 FROM apps WHERE id = ? AND deleted_at IS NULL`,
  update: `UPDATE apps SET name = @name, metadata = @metadata, updated_at = @now WHERE id = @id AND deleted_at IS NULL`,
  softDelete: `UPDATE apps SET deleted_at = @now, updated_at = @now WHERE id = @id AND deleted_at IS NULL`,
  listFirst: `SELECT ${COLUMNS} FROM apps WHERE deleted_at IS NULL ORDER BY created_at DESC, id DESC LIMIT ?`,
  listAfter: `SELECT ${COLUMNS} FROM apps WHERE deleted_at IS NULL AND (created_at, id) < (?, ?)
    ORDER BY created_at DESC, id DESC LIMIT ?`,
  countEndpoints: `SELECT count(*) FROM endpoints WHERE app_id = ? AND deleted_at IS NULL`,
  // deliveries_app holds every application's rows but default's (a partial index): default's are counted by a scan.
  countDeliveries: `SELECT status, count(*) AS n FROM deliveries INDEXED BY deliveries_app WHERE app_id = ? AND app_id <> 'default' GROUP BY status`,
  countDefaultDeliveries: `SELECT status, count(*) AS n FROM deliveries WHERE app_id = 'default' GROUP BY status`,
  deliveriesByApp: `SELECT app_id AS appId, status, count(*) AS n FROM deliveries GROUP BY app_id, status`,
  // Through the queue's partial indexes: the cost is the number of queued rows, not of the table.
  pendingByApp: `SELECT app_id AS appId, 'pending' AS status, count(*) AS n FROM deliveries INDEXED BY deliveries_due WHERE status = 'pending'
    GROUP BY app_id ORDER BY n DESC LIMIT ?`,
  inFlightByApp: `SELECT app_id AS appId, 'in_flight' AS status, count(*) AS n FROM deliveries INDEXED BY deliveries_leases WHERE status = 'in_flight'
    GROUP BY app_id ORDER BY n DESC LIMIT ?`,
  insertToken: `INSERT INTO portal_tokens (id, app_id, read_only, expires_at, created_at) VALUES (@id, @appId, @readOnly, @expiresAt, @createdAt)`,
  getToken: `SELECT id, app_id AS appId, read_only AS readOnly, expires_at AS expiresAt, created_at AS createdAt FROM portal_tokens WHERE id = ?`,
  deleteTokens: `DELETE FROM portal_tokens WHERE app_id = ?`,
  deleteExpiredTokens: `DELETE FROM portal_tokens WHERE app_id = ? AND expires_at <= ?`,
  // Scoped keys of a deleted application: revoked with it.
  revokeKeys: `UPDATE api_keys SET revoked_at = @now WHERE app_id = @id AND revoked_at IS NULL`,
} as const

type RawApp = Omit<AppRow, 'metadata'> & { metadata: string }

const mapApp = (r: RawApp | undefined): AppRow | null => (r ? { ...r, metadata: JSON.parse(r.metadata) as Record<string, unknown> } : null)

/** Creates the apps store over a connection. */
export function createAppsStore(db: Db): AppsStore {
  const s = prepareAll(db, SQL)
  const exists = s.exists.pluck()
  const countEndpoints = s.countEndpoints.pluck()
  // Known live applications; a delete through this store forgets its id at once. Another process
  // never deletes applications (only the API does), so no foreign check is needed here.
  const known = new Set<string>([DEFAULT_APP])
  const KNOWN_MAX = 100_000
  return {
    insert: (row, now) => s.insert.run({ id: row.id, name: row.name, metadata: JSON.stringify(row.metadata), now }).changes > 0,
    get: (id) => mapApp(s.get.get(id) as RawApp | undefined),
    exists(id) {
      if (known.has(id)) return true
      const found = exists.get(id) !== undefined
      if (found) {
        if (known.size >= KNOWN_MAX) known.clear()
        known.add(id)
      }
      return found
    },
    update: (id, p, now) => s.update.run({ id, name: p.name, metadata: JSON.stringify(p.metadata), now }).changes > 0,
    softDelete(id, now) {
      known.delete(id)
      if (s.softDelete.run({ id, now }).changes === 0) return false
      s.deleteTokens.run(id)
      s.revokeKeys.run({ id, now })
      return true
    },
    list({ limit, cursor }) {
      const after = cursor ? decodeKeyCursor(cursor, APP_CURSOR_TAG, 2) : null
      const rows = (after ? s.listAfter.all(Number(after[0]), after[1], limit + 1) : s.listFirst.all(limit + 1)) as RawApp[]
      const data = rows.slice(0, limit).map((r) => mapApp(r)!)
      const last = data[data.length - 1]
      return { data, next_cursor: rows.length > limit && last ? encodeKeyCursor(APP_CURSOR_TAG, [last.createdAt, last.id]) : null }
    },
    counts(id) {
      const deliveries = { pending: 0, in_flight: 0, success: 0, dead: 0, cancelled: 0 }
      const rows = (id === DEFAULT_APP ? s.countDefaultDeliveries.all() : s.countDeliveries.all(id)) as { status: keyof typeof deliveries; n: number }[]
      for (const r of rows) deliveries[r.status] = r.n
      return { endpoints: countEndpoints.get(id) as number, deliveries }
    },
    countsByApp: () => s.deliveriesByApp.all() as { appId: string; status: string; n: number }[],
    queuedByApp: (limit) => [...s.pendingByApp.all(limit), ...s.inFlightByApp.all(limit)] as { appId: string; status: 'pending' | 'in_flight'; n: number }[],
    insertPortalToken(row) {
      s.deleteExpiredTokens.run(row.appId, row.createdAt)
      s.insertToken.run({ ...row, readOnly: row.readOnly ? 1 : 0 })
    },
    getPortalToken(id) {
      const r = s.getToken.get(id) as (Omit<PortalTokenRow, 'readOnly'> & { readOnly: number }) | undefined
      return r ? { ...r, readOnly: r.readOnly === 1 } : null
    },
  }
}
