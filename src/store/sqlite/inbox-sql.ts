/**
 * The inbox store's fixed statements. Counts (inbox_counts, inbox_counters.unread_count) are moved
 * by the triggers of schema.sql in the same statement as each insert, update and delete, so none
 * of these statements touches them.
 */
import { messageColumns } from '../inbox-types.js'

const INSERT_COLUMNS = `INSERT INTO inbox_messages (id, user_id, app_id, notification_id, delivery_id, topic, title, body, body_format,
    severity, action_url, payload, tags, created_at, seq, unread_after) VALUES`
/** Parameters per inserted message. */
export const MESSAGE_WIDTH = 16
const MESSAGE_VALUES = `(${Array(MESSAGE_WIDTH).fill('?').join(', ')})`
/**
 * A batch inserts its messages this many rows per statement. Multi-row VALUES measured ~35%
 * faster than json_each (which re-parses each row's array once per column) and than one
 * statement per row; 50 rows × 16 parameters stays far below SQLite's parameter limit.
 */
export const MESSAGES_PER_INSERT = 50

/** Who may be changed: the user's own messages, and with an app-limited token only that app's. */
const OWN = `+user_id = @userId AND (@appId IS NULL OR app_id = @appId) AND id IN (SELECT value FROM json_each(@ids))`
/** The optional filters of a bulk change ({topic?, tags?, app_id?, read?}); `tags` matches any. */
const FILTER = `(@topic IS NULL OR topic = @topic) AND (@appId IS NULL OR app_id = @appId)
  AND (@read IS NULL OR read = @read) AND snoozed_until IS NULL
  AND (@tags IS NULL OR EXISTS (SELECT 1 FROM json_each(tags) t WHERE t.value IN (SELECT value FROM json_each(@tags))))`
const RETURN_ID = `RETURNING id`

/** The inbox store's fixed statements by name (exported for the query-plan test). */
export const INBOX_SQL = {
  insert: `${INSERT_COLUMNS} ${MESSAGE_VALUES}`,
  insertChunk: `${INSERT_COLUMNS} ${Array(MESSAGES_PER_INSERT).fill(MESSAGE_VALUES).join(', ')}`,
  byDelivery: `SELECT ${messageColumns()} FROM inbox_messages WHERE delivery_id = ?`,
  byId: `SELECT ${messageColumns()} FROM inbox_messages WHERE id = ?`,
  unread: `SELECT unread_count FROM inbox_counters WHERE user_id = ?`,
  existing: `SELECT delivery_id FROM inbox_messages WHERE delivery_id IN (SELECT value FROM json_each(?))`,
  // The unread counts returned are before the batch's messages (the insert trigger adds them).
  countNew: `INSERT INTO inbox_counters (user_id, unread_count, last_seq)
    SELECT value->>0, 0, 2 * (value->>1) FROM json_each(@users) WHERE true
    ON CONFLICT (user_id) DO UPDATE SET last_seq = last_seq + excluded.last_seq
    RETURNING user_id AS userId, unread_count AS unread, last_seq AS seq`,
  newMessage: `INSERT INTO inbox_counters (user_id, unread_count, last_seq) VALUES (?, 0, 2)
    ON CONFLICT (user_id) DO UPDATE SET last_seq = last_seq + 2
    RETURNING unread_count + 1 AS unread, last_seq AS seq`,
  nextSeq: `INSERT INTO inbox_counters (user_id, unread_count, last_seq) VALUES (?, 0, 1)
    ON CONFLICT (user_id) DO UPDATE SET last_seq = last_seq + 1 RETURNING last_seq`,
  lastSeq: `SELECT last_seq FROM inbox_counters WHERE user_id = ?`,
  appendEvent: `INSERT INTO inbox_stream (user_id, seq, kind, data, created_at) VALUES (?, ?, ?, ?, ?)`,
  trim: `DELETE FROM inbox_stream WHERE user_id = ? AND seq <= ?`,
  positionOf: `SELECT rowid FROM inbox_messages WHERE id = ? AND user_id = ?`,
  counts: `SELECT tag, sum(total) AS total, sum(unread) AS unread, sum(unseen) AS unseen FROM inbox_counts
    WHERE user_id = @userId AND (@appId IS NULL OR app_id = @appId) AND (@topic IS NULL OR topic = @topic)
      AND tag IN (SELECT value FROM json_each(@tags)) GROUP BY tag`,
  // State changes by id: `+user_id` keeps the owner check but stops SQLite from choosing the
  // per-user index, which walked the user's whole inbox (~0.7 µs per message) for a few ids.
  read: `UPDATE inbox_messages SET read = 1, read_at = @now, seen = 1, seen_at = coalesce(seen_at, @now)
    WHERE ${OWN} AND read = 0 ${RETURN_ID}`,
  unreadState: `UPDATE inbox_messages SET read = 0, read_at = NULL WHERE ${OWN} AND read = 1 ${RETURN_ID}`,
  seen: `UPDATE inbox_messages SET seen = 1, seen_at = @now WHERE ${OWN} AND seen = 0 ${RETURN_ID}`,
  archive: `UPDATE inbox_messages SET archived = 1, archived_at = @now WHERE ${OWN} AND archived = 0 ${RETURN_ID}`,
  unarchive: `UPDATE inbox_messages SET archived = 0, archived_at = NULL WHERE ${OWN} AND archived = 1 ${RETURN_ID}`,
  clicked: `UPDATE inbox_messages SET clicked_at = coalesce(clicked_at, @now), read = 1, read_at = coalesce(read_at, @now),
      seen = 1, seen_at = coalesce(seen_at, @now)
    WHERE ${OWN} AND (clicked_at IS NULL OR read = 0) ${RETURN_ID}`,
  snooze: `UPDATE inbox_messages SET snoozed_until = @until WHERE ${OWN} AND snoozed_until IS NOT @until ${RETURN_ID}`,
  unsnooze: `UPDATE inbox_messages SET snoozed_until = NULL WHERE ${OWN} AND snoozed_until IS NOT NULL ${RETURN_ID}`,
  // Bulk changes by filter. read-all and seen-all reach archived messages too (as read-all always
  // did); none reaches a snoozed message, which is hidden until it wakes.
  readAll: `UPDATE inbox_messages SET read = 1, read_at = @now, seen = 1, seen_at = coalesce(seen_at, @now)
    WHERE user_id = @userId AND read = 0 AND ${FILTER} ${RETURN_ID}`,
  seenAll: `UPDATE inbox_messages SET seen = 1, seen_at = @now WHERE user_id = @userId AND seen = 0 AND ${FILTER} ${RETURN_ID}`,
  archiveAll: `UPDATE inbox_messages SET archived = 1, archived_at = @now
    WHERE user_id = @userId AND archived = 0 AND ${FILTER} ${RETURN_ID}`,
  // Snooze wake-ups: the index on snoozed_until gives the next one and the due ones.
  nextWake: `SELECT min(snoozed_until) FROM inbox_messages WHERE snoozed_until IS NOT NULL`,
  wakeDue: `UPDATE inbox_messages SET snoozed_until = NULL, read = 0, read_at = NULL
    WHERE rowid IN (SELECT rowid FROM inbox_messages WHERE snoozed_until <= @now ORDER BY snoozed_until LIMIT @limit)
    RETURNING id, user_id AS userId, app_id AS appId`,
  // The click-tracking route: one recipient's message of a notification.
  byNotificationUser: `SELECT m.id FROM deliveries d JOIN inbox_messages m ON m.delivery_id = d.id
    WHERE d.notification_id = ? AND d.recipient = ? AND d.channel = 'inbox'`,
} as const
