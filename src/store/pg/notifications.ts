/** The notifications table on PostgreSQL: `Async<NotificationsStore>` (store/notifications.ts is the contract). */
import type { Async } from '../contract.js'
import type { NotificationRow, NotificationsStore } from '../notifications.js'
import { parseJsonOr } from '../../lib/json.js'
import type { PgQueryable } from './queryable.js'

const COLUMNS = `id, app_id AS "appId", topic, tags, dedup_key AS "dedupKey", request, recipients, deliveries, created_at AS "createdAt"`

/** The PostgreSQL notification statements by name. */
export const PG_NOTIFICATIONS_SQL = {
  insert: `INSERT INTO notifications (id, app_id, topic, tags, dedup_key, request, recipients, deliveries, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
  get: `SELECT ${COLUMNS} FROM notifications WHERE id = $1`,
  byDedupKey: `SELECT ${COLUMNS} FROM notifications WHERE app_id = $1 AND dedup_key = $2`,
  list: `SELECT ${COLUMNS} FROM notifications n
    WHERE ($1::text IS NULL OR topic = $1) AND ($2::text IS NULL OR app_id = $2)
      AND ($3::bigint IS NULL OR created_at >= $3) AND ($4::bigint IS NULL OR created_at < $4)
      AND ($5::text IS NULL OR id < $5)
      AND ($6::text IS NULL
        OR EXISTS (SELECT 1 FROM deliveries d WHERE d.notification_id = n.id AND d.recipient = $6)
        OR EXISTS (SELECT 1 FROM notification_suppressions s WHERE s.notification_id = n.id AND s.recipient = $6))
    ORDER BY id DESC LIMIT $7`,
} as const

type Raw = Omit<NotificationRow, 'tags'> & { tags: string }
const map = (r: Raw): NotificationRow => ({ ...r, tags: parseJsonOr<string[]>(r.tags, []) })

/** Creates the notifications store over a pool or a transaction's client. */
export function createPgNotificationsStore(q: PgQueryable): Async<NotificationsStore> {
  const S = PG_NOTIFICATIONS_SQL
  return {
    async insert(row) {
      await q.query(S.insert, [
        row.id,
        row.appId ?? 'default',
        row.topic,
        JSON.stringify(row.tags ?? []),
        row.dedupKey,
        row.request,
        row.recipients,
        row.deliveries,
        row.createdAt,
      ])
    },
    get: async (id) => {
      const r = (await q.query<Raw>(S.get, [id])).rows[0]
      return r ? map(r) : null
    },
    byDedupKey: async (appId, key) => {
      const r = (await q.query<Raw>(S.byDedupKey, [appId, key])).rows[0]
      return r ? map(r) : null
    },
    list: async (f) =>
      (await q.query<Raw>(S.list, [f.topic, f.appId, f.since, f.until, f.after, f.userId, f.limit < 0 ? null : f.limit])).rows.map(map),
  }
}
