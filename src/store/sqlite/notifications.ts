import type { Db } from './db.js'
import { parseJsonOr } from '../../lib/json.js'
import { type NotificationRow, type NotificationsStore } from '../notifications.js'

const COLUMNS = `id, app_id AS appId, topic, tags, dedup_key AS dedupKey, request, recipients, deliveries, created_at AS createdAt`

const SQL = {
  insert: `INSERT INTO notifications (id, app_id, topic, tags, dedup_key, request, recipients, deliveries, created_at)
    VALUES (@id, @appId, @topic, @tags, @dedupKey, @request, @recipients, @deliveries, @createdAt)`,
  get: `SELECT ${COLUMNS} FROM notifications WHERE id = ?`,
  byDedupKey: `SELECT ${COLUMNS} FROM notifications WHERE app_id = ? AND dedup_key = ?`,
  list: `SELECT ${COLUMNS} FROM notifications n
    WHERE (@topic IS NULL OR topic = @topic) AND (@appId IS NULL OR app_id = @appId)
      AND (@since IS NULL OR created_at >= @since) AND (@until IS NULL OR created_at < @until)
      AND (@after IS NULL OR id < @after)
      AND (@userId IS NULL
        OR EXISTS (SELECT 1 FROM deliveries d WHERE d.notification_id = n.id AND d.recipient = @userId)
        OR EXISTS (SELECT 1 FROM notification_suppressions s WHERE s.notification_id = n.id AND s.recipient = @userId))
    ORDER BY id DESC LIMIT @limit`,
} as const

type Raw = Omit<NotificationRow, 'tags'> & { tags: string }
const map = (r: Raw | undefined): NotificationRow | null => (r ? { ...r, tags: parseJsonOr<string[]>(r.tags, []) } : null)

/** Creates the notifications store over a connection. */
export function createNotificationsStore(db: Db): NotificationsStore {
  const insert = db.prepare(SQL.insert)
  const get = db.prepare(SQL.get)
  const byDedupKey = db.prepare(SQL.byDedupKey)
  const list = db.prepare(SQL.list)
  return {
    insert: (row) => void insert.run({ ...row, appId: row.appId ?? 'default', tags: JSON.stringify(row.tags ?? []) }),
    get: (id) => map(get.get(id) as Raw | undefined),
    byDedupKey: (appId, key) => map(byDedupKey.get(appId, key) as Raw | undefined),
    list: (f) => (list.all(f) as Raw[]).map((r) => map(r)!),
  }
}
