/**
 * Last-Event-ID replay of the inbox stream (docs/notifications-basics.md). Since schema v3 a user's events live in
 * two places: the stream log (state changes, and message events written before v3) and the
 * messages themselves (`seq` for the `notification` event, seq + 1 for its `unread_count`).
 * Used by createInboxStore; import through './inbox.js'.
 */
import type { Db } from './db.js'
import type { RawMessage, StreamEvent } from './inbox.js'
import { parseJsonOr } from '../lib/json.js'

/** The stream log keeps this many events per user for Last-Event-ID replay (docs/notifications-basics.md). */
export const STREAM_LOG_SIZE = 1000

const SQL = {
  // Log rows: state events, and the message events written before v3 (joined to their message).
  log: `SELECT e.seq, e.kind, e.data, m.id AS msgId, m.topic, m.title, m.body, m.severity, m.action_url AS actionUrl,
      m.seen, m.read, m.archived, m.created_at AS createdAt
    FROM inbox_stream e LEFT JOIN inbox_messages m ON e.kind = 'notification' AND m.id = e.data
    WHERE e.user_id = ? AND e.seq > ? ORDER BY e.seq LIMIT ?`,
  // A user's messages newest first, as replay reads them (see `messagesSince`).
  recent: `SELECT seq, 'message' AS kind, unread_after AS data, id AS msgId, topic, title, body, severity,
      action_url AS actionUrl, seen, read, archived, created_at AS createdAt
    FROM inbox_messages WHERE user_id = ? AND archived = ? ORDER BY rowid DESC`,
} as const

/** A replay row: a log row (`data` is its JSON), or a message row (kind 'message', `data` is unread_after). */
type ReplayRow = { seq: number | null; kind: StreamEvent['kind'] | 'message'; data: string | number; msgId: string | null } & Omit<
  RawMessage,
  'id' | 'userId' | 'notificationId' | 'deliveryId' | 'payload'
>

/**
 * Builds `replay(userId, afterSeq, limit)`: the user's events with seq > afterSeq among their
 * last STREAM_LOG_SIZE, oldest first. `lastSeq` reads the user's counter; `toJson` turns a
 * message row into the wire shape of a `notification` event.
 */
export function createReplay(
  db: Db,
  lastSeq: (userId: string) => number,
  toJson: (m: RawMessage) => Record<string, unknown>,
): (userId: string, afterSeq: number, limit?: number) => StreamEvent[] {
  const log = db.prepare(SQL.log)
  const recent = db.prepare(SQL.recent)
  const json = (r: ReplayRow, userId: string) =>
    toJson({ ...r, id: r.msgId!, userId, notificationId: null, deliveryId: null, payload: null } as RawMessage)

  /**
   * The message rows with seq >= `after`, newest first per archived state. Within a user, rowid
   * order is arrival order and so seq order: the scan stops at the first older row (or a row
   * written before v3, without seq), reading only what is replayed.
   */
  const messagesSince = (userId: string, after: number): ReplayRow[] => {
    const out: ReplayRow[] = []
    for (const archived of [0, 1]) {
      for (const r of recent.iterate(userId, archived) as IterableIterator<ReplayRow>) {
        if (r.seq === null || r.seq < after) break
        out.push(r)
      }
    }
    return out
  }

  // One (deferred, read-only) transaction: the log and the messages come from the same snapshot.
  const rowsSince = db.transaction((userId: string, afterSeq: number, limit: number) => {
    // Only the last STREAM_LOG_SIZE events are kept: the log is trimmed, older message events skipped.
    const after = Math.max(afterSeq, lastSeq(userId) - STREAM_LOG_SIZE)
    const rows = [...(log.all(userId, after, limit) as ReplayRow[]), ...messagesSince(userId, after)]
    return { after, rows: rows.sort((a, b) => a.seq! - b.seq!) }
  })

  return (userId, afterSeq, limit = STREAM_LOG_SIZE) => {
    const { after, rows } = rowsSince(userId, afterSeq, limit)
    const out: StreamEvent[] = []
    for (const r of rows) {
      const seq = r.seq!
      if (r.kind === 'message') {
        // A message row at seq == after still owes its unread_count event at seq + 1.
        if (seq > after) out.push({ seq, kind: 'notification', data: json(r, userId) })
        out.push({ seq: seq + 1, kind: 'unread_count', data: { unread_count: r.data as number } })
      } else if (r.kind !== 'notification') {
        out.push({ seq, kind: r.kind, data: parseJsonOr<Record<string, unknown>>(r.data as string, {}) })
      } else if (r.msgId !== null) {
        // A message removed by retention since is skipped; ids stay increasing.
        out.push({ seq, kind: r.kind, data: json(r, userId) })
      }
      if (out.length >= limit) break
    }
    return out.length > limit ? out.slice(0, limit) : out
  }
}
