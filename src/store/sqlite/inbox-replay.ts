/**
 * Last-Event-ID replay of the inbox stream (docs/notifications.md). A user's events live in two
 * places: the stream log (state changes, snooze wake-ups, and message events written before v3)
 * and the messages themselves (`seq` for the `notification` event, seq + 1 for its
 * `unread_count`). Used by createInboxStore.
 */
import type { Db } from './db.js'
import { mapMessage, messageColumns, messageJson, STREAM_LOG_SIZE, type RawMessage, type StreamEvent } from '../inbox-types.js'
import { parseJsonOr } from '../../lib/json.js'

const SQL = {
  // Log rows: state events, and `notification` events that name their message by id (a snooze
  // wake-up, or a message written before v3), joined to the message as it is now.
  log: `SELECT e.seq, e.kind AS eventKind, e.data AS eventData, ${messageColumns('m')}
    FROM inbox_stream e LEFT JOIN inbox_messages m ON e.kind = 'notification' AND m.id = e.data
    WHERE e.user_id = ? AND e.seq > ? ORDER BY e.seq LIMIT ?`,
  // A user's messages newest first, as replay reads them (see `messagesSince`).
  recent: `SELECT seq, 'message' AS eventKind, unread_after AS eventData, ${messageColumns()}
    FROM inbox_messages WHERE user_id = ? AND archived = ? ORDER BY rowid DESC`,
} as const

/** A replay row: a log row (`eventData` is its JSON), or a message row (kind 'message', `eventData` is unread_after). */
type ReplayRow = { seq: number | null; eventKind: StreamEvent['kind'] | 'message'; eventData: string | number } & RawMessage

/**
 * Builds `replay(userId, afterSeq, limit)`: the user's events with seq > afterSeq among their
 * last STREAM_LOG_SIZE, oldest first. `lastSeq` reads the user's counter.
 */
export function createReplay(db: Db, lastSeq: (userId: string) => number): (userId: string, afterSeq: number, limit?: number) => StreamEvent[] {
  const log = db.prepare(SQL.log)
  const recent = db.prepare(SQL.recent)
  const json = (r: ReplayRow) => messageJson(mapMessage(r))

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
      if (r.eventKind === 'message') {
        // A message row at seq == after still owes its unread_count event at seq + 1.
        if (seq > after) out.push({ seq, kind: 'notification', data: json(r) })
        out.push({ seq: seq + 1, kind: 'unread_count', data: { unread_count: r.eventData as number } })
      } else if (r.eventKind !== 'notification') {
        out.push({ seq, kind: r.eventKind, data: parseJsonOr<Record<string, unknown>>(r.eventData as string, {}) })
      } else if (r.id !== null) {
        // A message removed by retention since is skipped; ids stay increasing.
        out.push({ seq, kind: r.eventKind, data: json(r) })
      }
      if (out.length >= limit) break
    }
    return out.length > limit ? out.slice(0, limit) : out
  }
}
