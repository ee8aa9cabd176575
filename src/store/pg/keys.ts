import { decodeIdCursor, pageById } from '../../lib/cursor.js'
import type { Async } from '../contract.js'
import type { ApiKeyRow, KeysStore } from '../keys.js'
import type { PgQueryable } from './queryable.js'

const COLUMNS = `id, name, role, app_id AS "appId", hash, prefix, created_at AS "createdAt", last_used_at AS "lastUsedAt", revoked_at AS "revokedAt"`

const SQL = {
  insert: `INSERT INTO api_keys (id, name, role, app_id, hash, prefix, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
  get: `SELECT ${COLUMNS} FROM api_keys WHERE id = $1`,
  byHash: `SELECT ${COLUMNS} FROM api_keys WHERE hash = $1`,
  revoke: `UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL`,
  touch: `UPDATE api_keys SET last_used_at = $2 WHERE id = $1`,
  activeAdmins: `SELECT count(*) AS n FROM api_keys WHERE role = 'admin' AND app_id IS NULL AND revoked_at IS NULL`,
  listFirst: `SELECT ${COLUMNS} FROM api_keys ORDER BY id DESC LIMIT $1`,
  listAfter: `SELECT ${COLUMNS} FROM api_keys WHERE id < $1 ORDER BY id DESC LIMIT $2`,
} as const

/** The api_keys table on PostgreSQL (KeysStore, src/store/keys.ts). */
export function createPgKeysStore(q: PgQueryable): Async<KeysStore> {
  const one = async (sql: string, args: unknown[]): Promise<ApiKeyRow | null> => (await q.query<ApiKeyRow>(sql, args)).rows[0] ?? null
  return {
    async insert(row) {
      await q.query(SQL.insert, [row.id, row.name, row.role, row.appId ?? null, row.hash, row.prefix, row.createdAt])
    },
    get: (id) => one(SQL.get, [id]),
    byHash: (hash) => one(SQL.byHash, [hash]),
    revoke: async (id, now) => ((await q.query(SQL.revoke, [id, now])).rowCount ?? 0) > 0,
    async touch(id, now) {
      await q.query(SQL.touch, [id, now])
    },
    countActiveAdmins: async () => (await q.query<{ n: number }>(SQL.activeAdmins)).rows[0]!.n,
    async list({ limit, cursor }) {
      const after = decodeIdCursor(cursor)
      const rows = after ? await q.query<ApiKeyRow>(SQL.listAfter, [after, limit + 1]) : await q.query<ApiKeyRow>(SQL.listFirst, [limit + 1])
      return pageById(rows.rows, limit)
    },
  }
}
