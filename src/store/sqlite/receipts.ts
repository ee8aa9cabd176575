import type { Db } from './db.js'
import { type ReceiptRow, type ReceiptsStore } from '../receipts.js'

const SQL = {
  insert: `INSERT OR IGNORE INTO notification_suppressions (notification_id, recipient, channel, reason, created_at)
    SELECT @id, value->>0, value->>1, value->>2, @now FROM json_each(@rows)`,
  // Every delivery with its suppression and engagement, then the suppressions without a delivery.
  receipts: `SELECT d.recipient, d.channel, d.id AS deliveryId, d.status, d.last_error AS lastError, d.completed_at AS completedAt,
      s.reason, m.seen_at AS seenAt, m.read_at AS readAt, coalesce(m.clicked_at, c.clicked_at) AS clickedAt, m.archived_at AS archivedAt
    FROM deliveries d
    LEFT JOIN notification_suppressions s ON s.notification_id = d.notification_id AND s.recipient = d.recipient AND s.channel = d.channel
    LEFT JOIN inbox_messages m ON d.channel = 'inbox' AND m.delivery_id = d.id
    LEFT JOIN notification_clicks c ON d.channel = 'email' AND c.notification_id = d.notification_id AND c.recipient = d.recipient
    WHERE d.notification_id = @id
    UNION ALL
    SELECT s.recipient, s.channel, NULL, 'suppressed', NULL, NULL, s.reason, NULL, NULL, NULL, NULL
    FROM notification_suppressions s
    WHERE s.notification_id = @id AND NOT EXISTS (SELECT 1 FROM deliveries d
      WHERE d.notification_id = s.notification_id AND d.recipient = s.recipient AND d.channel = s.channel)
    LIMIT @limit`,
  count: `SELECT count(*) FROM notification_suppressions WHERE notification_id = ?`,
  hasDelivery: `SELECT 1 FROM deliveries WHERE notification_id = ? AND recipient = ? AND channel = ?`,
  click: `INSERT INTO notification_clicks (notification_id, recipient, clicked_at) VALUES (?, ?, ?)
    ON CONFLICT DO NOTHING`,
} as const

/** Creates the receipts store over a connection. */
export function createReceiptsStore(db: Db): ReceiptsStore {
  const insert = db.prepare(SQL.insert)
  const receipts = db.prepare(SQL.receipts)
  const count = db.prepare(SQL.count).pluck()
  const click = db.prepare(SQL.click)
  const hasDelivery = db.prepare(SQL.hasDelivery).pluck()
  return {
    suppress(id, rows, now) {
      if (rows.length > 0) insert.run({ id, now, rows: JSON.stringify(rows.map((r) => [r.recipient, r.channel, r.reason])) })
    },
    receipts: (id, limit) => receipts.all({ id, limit }) as ReceiptRow[],
    suppressedCount: (id) => count.get(id) as number,
    hasDelivery: (n, r, ch) => hasDelivery.get(n, r, ch) !== undefined,
    click: (notificationId, recipient, now) => void click.run(notificationId, recipient, now),
  }
}
