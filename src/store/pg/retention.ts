/**
 * The retention sweep on PostgreSQL (docs/operations.md; src/store/sqlite/retention.ts is the SQLite
 * one and explains the periods). The same deletions and the same result shape, in transactions
 * of at most `batchSize` deleted rows, with other choices where the engines differ:
 *
 * - No rowid: deliveries are walked by keyset on (completed_at, id), events and notifications by
 *   id (time-sortable ids, src/lib/ids.ts, so id order is creation order as rowid order is on
 *   SQLite) stopping at the first one not old enough, as on SQLite; neither has a created_at index.
 * - One statement per batch deletes what it selects: PostgreSQL locks rows, not the database, so
 *   a batch that passes over many kept rows delays no writer, and SQLite's read cap per
 *   transaction is not needed. `read` counts the rows each walk returned (those it deleted,
 *   and for events and notifications the rows they looked at), not the kept rows the deliveries
 *   statement passed over.
 * - Every sweep walks from the beginning (`full` is always true): a runner's remembered positions
 *   would be one node's memory, and other nodes delete too.
 * - Several nodes may sweep at once: each batch takes a transaction-scoped advisory lock, so the
 *   batches of two sweeps take turns and never fight over the same rows.
 */
import type { InboxStore, StreamEvent } from '../inbox.js'
import { RETENTION_BATCH_SIZE, type RetentionOptions, type RetentionResult } from '../retention.js'
import type { Async } from '../contract.js'
import type { PgTransact } from './clock-repair.js'
import type { PgQueryable } from './queryable.js'

/** What a PostgreSQL sweep needs: transactions, and (to log lowered unread counts) the inbox family made on a transaction's connection. */
export interface PgRetentionDeps {
  transact: PgTransact
  inbox?: (q: PgQueryable) => Pick<Async<InboxStore>, 'logUnreadCount'>
}

const SQL = {
  lock: `SELECT pg_advisory_xact_lock(hashtextextended('postbox:retention:' || current_schema(), 0))`,
  // $1 statuses, $2 cutoff, $3/$4 position, $5 limit.
  deliveries: `DELETE FROM deliveries WHERE id IN (
      SELECT id FROM deliveries WHERE completed_at IS NOT NULL AND completed_at < $2 AND status = ANY ($1::text[])
         AND (completed_at, id) > ($3, $4) ORDER BY completed_at, id LIMIT $5)
    RETURNING id, completed_at AS t, event_id AS "eventId", notification_id AS "notificationId"`,
  eventsWindow: `SELECT e.id, e.created_at AS t, NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id) AS free
    FROM events e WHERE e.id > $1 ORDER BY e.id LIMIT $2`,
  deleteEvents: `WITH e AS (DELETE FROM events WHERE id = ANY ($1::text[])
      AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.id) RETURNING id)
    SELECT count(*) AS n FROM e`,
  notificationsWindow: `SELECT n.id, n.created_at AS t, NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.notification_id = n.id) AS free
    FROM notifications n WHERE n.id > $1 ORDER BY n.id LIMIT $2`,
  // The receipts go with their notification (SQLite's notifications_receipts_delete trigger).
  deleteNotifications: `WITH n AS (DELETE FROM notifications WHERE id = ANY ($1::text[]) RETURNING id),
      s AS (DELETE FROM notification_suppressions WHERE notification_id IN (SELECT id FROM n)),
      c AS (DELETE FROM notification_clicks WHERE notification_id IN (SELECT id FROM n))
    SELECT count(*) AS n FROM n`,
  oldInbox: `SELECT id, user_id AS "userId", (read = 0 AND archived = 0 AND snoozed_until IS NULL) AS unread
    FROM inbox_messages WHERE created_at < $1 ORDER BY created_at, id LIMIT $2`,
  deleteInbox: `DELETE FROM inbox_messages WHERE id = ANY ($1::text[])`,
} as const

/** A keyset position: time, then id. */
interface Position {
  t: number
  id: string
}

const START = (): Position => ({ t: Number.MIN_SAFE_INTEGER, id: '' })

type Family = keyof RetentionResult['batches']

/** Deletes expired rows (docs/operations.md) in transactions of at most `batchSize` deleted rows. */
export async function sweepPgRetention(deps: PgRetentionDeps, opts: RetentionOptions): Promise<RetentionResult> {
  const limit = Math.max(1, Math.floor(opts.batchSize ?? RETENTION_BATCH_SIZE))
  const window = limit * 4
  const { now } = opts
  const eventsBefore = now - opts.eventsMs
  const result: RetentionResult = {
    deliveries: 0,
    events: 0,
    notifications: 0,
    inboxMessages: 0,
    batches: { deliveries: 0, events: 0, notifications: 0, inboxMessages: 0 },
    read: { deliveries: 0, events: 0, notifications: 0 },
    full: true,
  }
  const arms = [
    { statuses: ['success'], before: now - opts.successMs, at: START() },
    { statuses: ['dead', 'cancelled'], before: now - opts.deadMs, at: START() },
  ]
  const logged: [string, StreamEvent[]][] = []

  const deliveriesBatch = async (q: PgQueryable): Promise<[number, boolean]> => {
    let n = 0
    for (const arm of arms) {
      if (n >= limit) break
      const { rows } = await q.query<{ id: string; t: number }>(SQL.deliveries, [arm.statuses, arm.before, arm.at.t, arm.at.id, limit - n])
      const last = rows.reduce<Position | null>((m, r) => (m === null || r.t > m.t || (r.t === m.t && r.id > m.id) ? { t: r.t, id: r.id } : m), null)
      if (last) arm.at = last
      n += rows.length
    }
    result.read.deliveries += n
    // Fewer than asked for: both arms ran out.
    return [n, n < limit]
  }
  // One window of the events or the notifications walk, by id (see the header).
  const idBatch = (windowSql: string, deleteSql: string, family: 'events' | 'notifications') => {
    let after = ''
    return async (q: PgQueryable): Promise<[number, boolean]> => {
      const { rows } = await q.query<{ id: string; t: number; free: boolean }>(windowSql, [after, window])
      const ids: string[] = []
      let done = rows.length < window
      for (const r of rows) {
        if (ids.length >= limit) {
          done = false
          break
        }
        result.read[family]++
        // The first one not old enough ends the walk (read, not passed), as on SQLite.
        if (r.t >= eventsBefore) {
          done = true
          break
        }
        if (r.free) ids.push(r.id)
        after = r.id
      }
      const n = ids.length === 0 ? 0 : Number((await q.query<{ n: number }>(deleteSql, [ids])).rows[0]!.n)
      return [n, done]
    }
  }
  const eventsBatch = idBatch(SQL.eventsWindow, SQL.deleteEvents, 'events')
  const notificationsBatch = idBatch(SQL.notificationsWindow, SQL.deleteNotifications, 'notifications')
  const inboxBatch = async (q: PgQueryable): Promise<[number, boolean]> => {
    const { rows } = await q.query<{ id: string; userId: string; unread: boolean }>(SQL.oldInbox, [now - opts.inboxMs, limit])
    if (rows.length === 0) return [0, true]
    // The counts move with the delete (the inbox triggers, schema-directory.ts).
    await q.query(SQL.deleteInbox, [rows.map((r) => r.id)])
    const inbox = deps.inbox?.(q)
    if (inbox) for (const userId of new Set(rows.filter((r) => r.unread).map((r) => r.userId))) logged.push([userId, [await inbox.logUnreadCount(userId, now)]])
    return [rows.length, rows.length < limit]
  }

  const batches: [Family, (q: PgQueryable) => Promise<[number, boolean]>][] = [
    ['deliveries', deliveriesBatch],
    ['events', eventsBatch],
    ['notifications', notificationsBatch],
    ['inboxMessages', inboxBatch],
  ]
  for (const [family, batch] of batches) {
    for (;;) {
      logged.length = 0
      const [n, done] = await deps.transact(async (q) => {
        await q.query(SQL.lock)
        return batch(q)
      })
      for (const [userId, streamEvents] of logged) opts.onStreamEvents?.(userId, streamEvents)
      result[family] += n
      result.batches[family]++
      if (done) break
    }
  }
  return result
}
