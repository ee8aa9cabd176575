import type { Db } from './db.js'
import type { InboxStore, StreamEvent } from './inbox.js'

/** What a sweep needs: the connection, and the inbox store to log lowered unread counts. */
export interface RetentionStore {
  readonly db: Db
  readonly inbox?: Pick<InboxStore, 'logUnreadCount'>
}

/** Retention periods (SPEC §2) and the sweep's batch size. */
export interface RetentionOptions {
  now: number
  /** Successful deliveries (and their attempts) older than this, by completed_at, go. */
  successMs: number
  /** Dead and cancelled deliveries older than this, by completed_at, go. */
  deadMs: number
  /** Inbox messages older than this, by created_at, go. */
  inboxMs: number
  /** Events with no remaining deliveries older than this, by created_at, go. */
  eventsMs: number
  /** Rows per transaction; default 1,000 (SPEC §2). */
  batchSize?: number
  /**
   * Called after each committed batch for every user whose unread count it lowered, with the
   * `unread_count` event it logged (needs `store.inbox`), so live streams can be told.
   */
  onStreamEvents?: (userId: string, events: StreamEvent[]) => void
}

/** What one sweep deleted, and how many transactions each family took. */
export interface RetentionResult {
  deliveries: number
  events: number
  inboxMessages: number
  batches: { deliveries: number; events: number; inboxMessages: number }
}

/** The default number of rows deleted per transaction (SPEC §2). */
export const RETENTION_BATCH_SIZE = 1000

// Deliveries and events are walked by time from where the previous batch stopped (keyset), so
// rows that must stay (dead rows younger than deadMs inside the success window, events that still
// have deliveries) are not re-read by every batch. Attempts go with their delivery through
// ON DELETE CASCADE.
const SQL = {
  deleteSuccess: `DELETE FROM deliveries WHERE id IN (
      SELECT id FROM deliveries WHERE completed_at >= @from AND completed_at < @before AND status = 'success'
      ORDER BY completed_at LIMIT @limit)
    RETURNING completed_at`,
  deleteFinished: `DELETE FROM deliveries WHERE id IN (
      SELECT id FROM deliveries WHERE completed_at >= @from AND completed_at < @before AND status IN ('dead', 'cancelled')
      ORDER BY completed_at LIMIT @limit)
    RETURNING completed_at`,
  deleteEvents: `DELETE FROM events WHERE id IN (
      SELECT e.id FROM events e
       WHERE e.created_at >= @from AND e.created_at < @before
         AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id)
       ORDER BY e.created_at LIMIT @limit)
    RETURNING created_at`,
  oldInbox: `SELECT id, user_id AS userId, (read = 0 AND archived = 0) AS unread
    FROM inbox_messages WHERE created_at < @before ORDER BY created_at LIMIT @limit`,
  deleteInbox: `DELETE FROM inbox_messages WHERE id IN (SELECT value FROM json_each(?))`,
  decrementUnread: `UPDATE inbox_counters SET unread_count = max(unread_count - @n, 0) WHERE user_id = @userId`,
} as const

type Family = keyof RetentionResult['batches']

/**
 * The sweep as a sequence of short transactions: each `next()` runs one batch of at most
 * `batchSize` rows and commits it. A family is done when a batch comes back short.
 * Deliveries go first so events they release can go in the same sweep.
 */
function* retentionSteps(store: RetentionStore, opts: RetentionOptions): Generator<void, RetentionResult> {
  const { db } = store
  const logged: [string, StreamEvent[]][] = []
  const limit = Math.max(1, Math.floor(opts.batchSize ?? RETENTION_BATCH_SIZE))
  const { now } = opts
  const deleteSuccess = db.prepare(SQL.deleteSuccess).pluck()
  const deleteFinished = db.prepare(SQL.deleteFinished).pluck()
  const deleteEvents = db.prepare(SQL.deleteEvents).pluck()
  const oldInbox = db.prepare(SQL.oldInbox)
  const deleteInbox = db.prepare(SQL.deleteInbox)
  const decrementUnread = db.prepare(SQL.decrementUnread)
  const result: RetentionResult = {
    deliveries: 0,
    events: 0,
    inboxMessages: 0,
    batches: { deliveries: 0, events: 0, inboxMessages: 0 },
  }

  // One transaction deletes up to `limit` rows: expired successes first, then dead and cancelled.
  const arms = [
    { stmt: deleteSuccess, before: now - opts.successMs, from: Number.MIN_SAFE_INTEGER, done: false },
    { stmt: deleteFinished, before: now - opts.deadMs, from: Number.MIN_SAFE_INTEGER, done: false },
  ]
  const deliveriesBatch = (): number => {
    let n = 0
    for (const arm of arms) {
      if (n >= limit || arm.done) continue
      const want = limit - n
      const times = arm.stmt.all({ from: arm.from, before: arm.before, limit: want }) as number[]
      for (const t of times) if (t > arm.from) arm.from = t
      arm.done = times.length < want
      n += times.length
    }
    return n
  }
  let eventsFrom = Number.MIN_SAFE_INTEGER
  const eventsBatch = (): number => {
    const times = deleteEvents.all({ from: eventsFrom, before: now - opts.eventsMs, limit }) as number[]
    for (const t of times) if (t > eventsFrom) eventsFrom = t
    return times.length
  }
  const inboxBatch = (): number => {
    const rows = oldInbox.all({ before: now - opts.inboxMs, limit }) as { id: string; userId: string; unread: number }[]
    if (rows.length === 0) return 0
    // The unread counter must stay exact, so it moves in the same transaction as the delete.
    const unreadByUser = new Map<string, number>()
    for (const r of rows) if (r.unread) unreadByUser.set(r.userId, (unreadByUser.get(r.userId) ?? 0) + 1)
    const n = deleteInbox.run(JSON.stringify(rows.map((r) => r.id))).changes
    for (const [userId, count] of unreadByUser) {
      decrementUnread.run({ userId, n: count })
      // The replay log and live streams must see the new count, as after any other change.
      if (store.inbox) logged.push([userId, [store.inbox.logUnreadCount(userId, now)]])
    }
    return n
  }
  const batches: [Family, () => number][] = [
    ['deliveries', deliveriesBatch],
    ['events', eventsBatch],
    ['inboxMessages', inboxBatch],
  ]
  for (const [family, batch] of batches) {
    const tx = db.transaction(batch)
    for (;;) {
      logged.length = 0
      const n = tx.immediate()
      for (const [userId, events] of logged) opts.onStreamEvents?.(userId, events)
      result[family] += n
      result.batches[family]++
      yield
      if (n < limit) break
    }
  }
  return result
}

/**
 * Deletes expired rows (SPEC §2) in transactions of at most `batchSize` rows. Synchronous: it
 * holds the event loop for the whole sweep, so a server should prefer `sweepRetentionAsync`.
 */
export function sweepRetention(store: RetentionStore, opts: RetentionOptions): RetentionResult {
  const steps = retentionSteps(store, opts)
  for (;;) {
    const r = steps.next()
    if (r.done) return r.value
  }
}

/**
 * The same sweep, yielding to the event loop between batches so API commits and the
 * dispatcher interleave with it: ingest waits for at most one batch (~1,000 row deletes).
 */
export async function sweepRetentionAsync(store: RetentionStore, opts: RetentionOptions): Promise<RetentionResult> {
  const steps = retentionSteps(store, opts)
  for (;;) {
    const r = steps.next()
    if (r.done) return r.value
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
}
