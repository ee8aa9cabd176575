import type { Db } from './db.js'

/** A stored notification, mapped to camelCase; `request` is the accepted request as JSON. */
export interface NotificationRow {
  id: string
  topic: string
  dedupKey: string | null
  request: string
  recipients: number
  deliveries: number
  createdAt: number
}

const COLUMNS = `id, topic, dedup_key AS dedupKey, request, recipients, deliveries, created_at AS createdAt`

const SQL = {
  insert: `INSERT INTO notifications (id, topic, dedup_key, request, recipients, deliveries, created_at)
    VALUES (@id, @topic, @dedupKey, @request, @recipients, @deliveries, @createdAt)`,
  get: `SELECT ${COLUMNS} FROM notifications WHERE id = ?`,
  byDedupKey: `SELECT ${COLUMNS} FROM notifications WHERE dedup_key = ?`,
} as const

/** The notifications table: one row per accepted POST /v1/notifications. */
export interface NotificationsStore {
  insert(row: NotificationRow): void
  get(id: string): NotificationRow | null
  byDedupKey(key: string): NotificationRow | null
}

/** Creates the notifications store over a connection. */
export function createNotificationsStore(db: Db): NotificationsStore {
  const insert = db.prepare(SQL.insert)
  const get = db.prepare(SQL.get)
  const byDedupKey = db.prepare(SQL.byDedupKey)
  return {
    insert: (row) => void insert.run(row),
    get: (id) => (get.get(id) as NotificationRow | undefined) ?? null,
    byDedupKey: (key) => (byDedupKey.get(key) as NotificationRow | undefined) ?? null,
  }
}
