/** Suppressions and clicks on PostgreSQL: `Async<ReceiptsStore>` (store/receipts.ts is the contract). */
import type { Async } from '../contract.js'
import type { ReceiptRow, ReceiptsStore } from '../receipts.js'
import type { PgQueryable } from './queryable.js'

/** The PostgreSQL receipt statements by name. */
export const PG_RECEIPTS_SQL = {
  insert: `INSERT INTO notification_suppressions (notification_id, recipient, channel, reason, created_at)
    SELECT $1, r.recipient, r.channel, r.reason, $2 FROM unnest($3::text[], $4::text[], $5::text[]) AS r(recipient, channel, reason)
    ON CONFLICT DO NOTHING`,
  // Every delivery with its suppression and engagement, then the suppressions without a delivery;
  // each part in (recipient, channel) order, the order SQLite reads them from its indexes.
  receipts: `SELECT recipient, channel, "deliveryId", status, "lastError", "completedAt", reason, "seenAt", "readAt", "clickedAt", "archivedAt"
    FROM (SELECT 0 AS part, d.recipient, d.channel, d.id AS "deliveryId", d.status, d.last_error AS "lastError",
        d.completed_at AS "completedAt", s.reason, m.seen_at AS "seenAt", m.read_at AS "readAt",
        coalesce(m.clicked_at, c.clicked_at) AS "clickedAt", m.archived_at AS "archivedAt"
      FROM deliveries d
      LEFT JOIN notification_suppressions s ON s.notification_id = d.notification_id AND s.recipient = d.recipient AND s.channel = d.channel
      LEFT JOIN inbox_messages m ON d.channel = 'inbox' AND m.delivery_id = d.id
      LEFT JOIN notification_clicks c ON d.channel = 'email' AND c.notification_id = d.notification_id AND c.recipient = d.recipient
      WHERE d.notification_id = $1
      UNION ALL
      SELECT 1, s.recipient, s.channel, NULL, 'suppressed', NULL, NULL, s.reason, NULL, NULL, NULL, NULL
      FROM notification_suppressions s
      WHERE s.notification_id = $1 AND NOT EXISTS (SELECT 1 FROM deliveries d
        WHERE d.notification_id = s.notification_id AND d.recipient = s.recipient AND d.channel = s.channel)) r
    ORDER BY part, recipient COLLATE "C", channel COLLATE "C" LIMIT $2`,
  count: `SELECT count(*) AS n FROM notification_suppressions WHERE notification_id = $1`,
  hasDelivery: `SELECT 1 FROM deliveries WHERE notification_id = $1 AND recipient = $2 AND channel = $3`,
  click: `INSERT INTO notification_clicks (notification_id, recipient, clicked_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
} as const

/** Creates the receipts store over a pool or a transaction's client. */
export function createPgReceiptsStore(q: PgQueryable): Async<ReceiptsStore> {
  const S = PG_RECEIPTS_SQL
  return {
    async suppress(id, rows, now) {
      if (rows.length === 0) return
      await q.query(S.insert, [id, now, rows.map((r) => r.recipient), rows.map((r) => r.channel), rows.map((r) => r.reason)])
    },
    receipts: async (id, limit) => (await q.query<ReceiptRow>(S.receipts, [id, limit < 0 ? null : limit])).rows,
    suppressedCount: async (id) => Number((await q.query<{ n: number }>(S.count, [id])).rows[0]!.n),
    hasDelivery: async (n, r, ch) => (await q.query(S.hasDelivery, [n, r, ch])).rows.length > 0,
    async click(notificationId, recipient, now) {
      await q.query(S.click, [notificationId, recipient, now])
    },
  }
}
