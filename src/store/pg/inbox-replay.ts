/**
 * Last-Event-ID replay of the inbox stream on PostgreSQL (store/sqlite/inbox-replay.ts is the SQLite
 * original and says where a user's events live). The log rows and the message rows are read by
 * one statement, so they come from one snapshot without a REPEATABLE READ transaction.
 */
import { mapMessage, messageColumns, messageJson, STREAM_LOG_SIZE, type RawMessage, type StreamEvent } from '../inbox-types.js'
import { parseJsonOr } from '../../lib/json.js'
import { quoteAliases } from './atomic.js'
import type { PgQueryable } from './queryable.js'

/**
 * The user's events after $2 among their last STREAM_LOG_SIZE: log rows (at most $3, joined to
 * the message a `notification` row names) and every message event since then, with the bound.
 */
export const PG_REPLAY_SQL = `WITH bound AS (
    SELECT greatest($2::bigint, coalesce((SELECT last_seq FROM inbox_counters WHERE user_id = $1), 0) - ${STREAM_LOG_SIZE}) AS after)
  (SELECT e.seq, e.kind AS "eventKind", e.data AS "eventData", b.after, ${quoteAliases(messageColumns('m'))}
    FROM bound b, inbox_stream e LEFT JOIN inbox_messages m ON e.kind = 'notification' AND m.id = e.data
    WHERE e.user_id = $1 AND e.seq > b.after ORDER BY e.seq LIMIT $3)
  UNION ALL
  SELECT m.seq, 'message', m.unread_after::text, b.after, ${quoteAliases(messageColumns('m'))}
    FROM bound b, inbox_messages m WHERE m.user_id = $1 AND m.archived IN (0, 1) AND m.seq >= b.after`

/** A replay row: a log row (`eventData` is its JSON), or a message row (kind 'message', `eventData` is unread_after). */
type ReplayRow = { seq: number; eventKind: StreamEvent['kind'] | 'message'; eventData: string; after: number } & RawMessage

/** Builds `replay(userId, afterSeq, limit)` as createReplay does for SQLite: oldest first, at most `limit`. */
export function createPgReplay(q: PgQueryable): (userId: string, afterSeq: number, limit?: number) => Promise<StreamEvent[]> {
  const json = (r: ReplayRow) => messageJson(mapMessage(r))
  return async (userId, afterSeq, limit = STREAM_LOG_SIZE) => {
    const rows = (await q.query<ReplayRow>(PG_REPLAY_SQL, [userId, afterSeq, limit])).rows.sort((a, b) => a.seq - b.seq)
    const out: StreamEvent[] = []
    for (const r of rows) {
      const seq = r.seq
      if (r.eventKind === 'message') {
        // A message row at seq == after still owes its unread_count event at seq + 1.
        if (seq > r.after) out.push({ seq, kind: 'notification', data: json(r) })
        out.push({ seq: seq + 1, kind: 'unread_count', data: { unread_count: Number(r.eventData) } })
      } else if (r.eventKind !== 'notification') {
        out.push({ seq, kind: r.eventKind, data: parseJsonOr<Record<string, unknown>>(r.eventData, {}) })
      } else if (r.id !== null) {
        // A message removed by retention since is skipped; ids stay increasing.
        out.push({ seq, kind: r.eventKind, data: json(r) })
      }
      if (out.length >= limit) break
    }
    return out.length > limit ? out.slice(0, limit) : out
  }
}
