import type { Db } from './db.js'
import { decodeIdCursor, pageById } from '../../lib/cursor.js'
import { type ApiKeyRow, type KeysStore } from '../keys.js'

const COLUMNS = `id, name, role, app_id AS appId, hash, prefix, created_at AS createdAt, last_used_at AS lastUsedAt, revoked_at AS revokedAt`

const SQL = {
  insert: `INSERT INTO api_keys (id, name, role, app_id, hash, prefix, created_at)
    VALUES (@id, @name, @role, @appId, @hash, @prefix, @createdAt)`,
  get: `SELECT ${COLUMNS} FROM api_keys WHERE id = ?`,
  byHash: `SELECT ${COLUMNS} FROM api_keys WHERE hash = ?`,
  revoke: `UPDATE api_keys SET revoked_at = @now WHERE id = @id AND revoked_at IS NULL`,
  touch: `UPDATE api_keys SET last_used_at = @now WHERE id = @id`,
  activeAdmins: `SELECT count(*) FROM api_keys WHERE role = 'admin' AND app_id IS NULL AND revoked_at IS NULL`,
  listFirst: `SELECT ${COLUMNS} FROM api_keys ORDER BY id DESC LIMIT ?`,
  listAfter: `SELECT ${COLUMNS} FROM api_keys WHERE id < ? ORDER BY id DESC LIMIT ?`,
} as const

/** Creates the keys store over a connection. */
export function createKeysStore(db: Db): KeysStore {
  const insert = db.prepare(SQL.insert)
  const get = db.prepare(SQL.get)
  const byHash = db.prepare(SQL.byHash)
  const revoke = db.prepare(SQL.revoke)
  const touch = db.prepare(SQL.touch)
  const activeAdmins = db.prepare(SQL.activeAdmins).pluck()
  const listFirst = db.prepare(SQL.listFirst)
  const listAfter = db.prepare(SQL.listAfter)
  return {
    insert: (row) => void insert.run({ ...row, appId: row.appId ?? null }),
    get: (id) => (get.get(id) as ApiKeyRow | undefined) ?? null,
    byHash: (hash) => (byHash.get(hash) as ApiKeyRow | undefined) ?? null,
    revoke: (id, now) => revoke.run({ id, now }).changes > 0,
    touch: (id, now) => void touch.run({ id, now }),
    countActiveAdmins: () => activeAdmins.get() as number,
    list({ limit, cursor }) {
      const after = decodeIdCursor(cursor)
      return pageById((after ? listAfter.all(after, limit + 1) : listFirst.all(limit + 1)) as ApiKeyRow[], limit)
    },
  }
}
