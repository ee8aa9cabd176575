import type Database from 'better-sqlite3'
import { prepareAll, type Db } from './db.js'
import type { InboxStore, StreamEvent } from '../inbox.js'
import type { Store } from '../index.js'
import { RETENTION_BATCH_SIZE, type RetentionOptions, type RetentionResult } from '../retention.js'

/** What a sweep needs: the connection, and the inbox store to log lowered unread counts. */
export interface RetentionStore {
  readonly db: Db
  readonly inbox?: Pick<InboxStore, 'logUnreadCount'>
  /**
   * Runs one batch in a transaction of its own, for the yielding sweeps. A server passes the
   * asynchronous Store's `tx`, so a batch waits for the Store's open transaction instead of
   * running inside it; without it a batch is `BEGIN IMMEDIATE` on `db` directly.
   */
  readonly transact?: <T>(batch: () => T) => Promise<T>
}

/** The yielding sweeps' transactions over the asynchronous Store's SQLite connection (docs/operations.md). */
export function storeRetention(store: Pick<Store, 'sqlite' | 'tx'>): RetentionStore {
  const sqlite = store.sqlite
  if (!sqlite) throw new Error('the SQLite retention sweep needs a SQLite store')
  return { db: sqlite.db, inbox: sqlite.inbox, transact: (batch) => store.tx(async () => batch()) }
}

// Deliveries are walked by completed_at from where the previous batch stopped (keyset on time,
// then rowid), and one transaction reads at most 4 × batchSize rows: rows that must stay (dead
// rows younger than deadMs inside the success window, events that still have deliveries) are
// passed over a window at a time, so no transaction holds the write lock for long however many
// of them there are. A runner (createRetentionRunner) starts each walk where the previous sweep's
// stopped, so kept rows are passed over once. Attempts go with their delivery through ON DELETE
// CASCADE.
// Events and notifications have no created_at index (one more b-tree per insert and delete for
// a column only retention reads by time), so they are walked by rowid, which is insertion order,
// and a walk stops at the first row not old enough: created_at is the writer's clock at insert,
// so it only goes down in rowid order when a clock went back, and then the older rows behind a
// younger one wait for it (later, never early). An event or a notification goes once no
// delivery refers to it.
const SQL = {
  finished: `SELECT rowid AS r, completed_at AS t, status = 'success' AS success FROM deliveries INDEXED BY deliveries_finished
    WHERE (completed_at, rowid) > (@t, @r) AND completed_at < @before ORDER BY completed_at, rowid LIMIT @window`,
  deleteDeliveries: `DELETE FROM deliveries WHERE rowid IN (SELECT value FROM json_each(?))
    RETURNING event_id AS eventId, notification_id AS notificationId`,
  // Events the events walk has passed over (rowid at or before @r) that the deleted deliveries
  // left without any: the walk will not come back for them (see createRetentionRunner).
  releaseEvents: `DELETE FROM events WHERE id IN (SELECT value FROM json_each(@ids)) AND rowid <= @r
    AND created_at < @before AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.id)`,
  // created_at comes after body in the record: a kept event with a large body costs its overflow
  // pages, as a notification's request does (below).
  events: `SELECT e.rowid AS r, e.created_at AS t, NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id) AS free
    FROM events e WHERE e.rowid > @r ORDER BY e.rowid LIMIT @window`,
  deleteEvents: `DELETE FROM events WHERE rowid IN (SELECT value FROM json_each(?))`,
  lastEvent: `SELECT coalesce(max(rowid), 0) FROM events`,
  // Likewise for notifications the notifications walk has passed (rowid at or before @r).
  releaseNotifications: `DELETE FROM notifications WHERE id IN (SELECT value FROM json_each(@ids)) AND rowid <= @r
    AND created_at < @before AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.notification_id = notifications.id)`,
  // created_at comes after request in the record: a kept row with a 100 KB request costs ~40 µs
  // (its overflow pages), so a window of 4,000 of them ~170 ms; with a 200 B request ~2 µs.
  notifications: `SELECT n.rowid AS r, n.created_at AS t, NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.notification_id = n.id) AS free
    FROM notifications n WHERE n.rowid > @r ORDER BY n.rowid LIMIT @window`,
  deleteNotifications: `DELETE FROM notifications WHERE rowid IN (SELECT value FROM json_each(?))`,
  lastNotification: `SELECT coalesce(max(rowid), 0) FROM notifications`,
  oldInbox: `SELECT id, user_id AS userId, (read = 0 AND archived = 0 AND snoozed_until IS NULL) AS unread
    FROM inbox_messages WHERE created_at < @before ORDER BY created_at LIMIT @limit`,
  deleteInbox: `DELETE FROM inbox_messages WHERE id IN (SELECT value FROM json_each(?))`,
} as const

/** A keyset position: time, then rowid (the events and notifications walks key on rowid alone). */
interface Position {
  t: number
  r: number
}

/** Where each keyset walk starts (and, once a sweep is done, where it stopped). */
interface Positions {
  success: Position
  dead: Position
  events: Position
  notifications: Position
}

const startPositions = (): Positions => ({
  success: { t: Number.MIN_SAFE_INTEGER, r: 0 },
  dead: { t: Number.MIN_SAFE_INTEGER, r: 0 },
  events: { t: Number.MIN_SAFE_INTEGER, r: 0 },
  notifications: { t: Number.MIN_SAFE_INTEGER, r: 0 },
})

/**
 * One window of a keyset walk: steps through `rows` (a statement limited to `window` rows),
 * takes the rows `wanted` says go, up to `want` of them, and moves `at` past every row it looked
 * at, stopping there. Done when the rows ran out before the window did, or at a row `stop` says
 * ends the walk (read, but not passed).
 */
function walkWindow<R extends Position>(
  rows: IterableIterator<R>, window: number, want: number, wanted: (row: R) => boolean, at: Position, stop?: (row: R) => boolean,
): { rowids: number[]; read: number; done: boolean } {
  const rowids: number[] = []
  let read = 0
  for (const row of rows) {
    if (rowids.length >= want) return { rowids, read, done: false }
    read++
    if (stop?.(row)) return { rowids, read, done: true }
    if (wanted(row)) rowids.push(row.r)
    at.t = row.t
    at.r = row.r
  }
  return { rowids, read, done: read < window }
}

type Family = keyof RetentionResult['batches']

/**
 * The sweep as a sequence of short transactions: each `next()` runs one batch of at most
 * `batchSize` deleted rows (and 4 × batchSize read) and commits it, until each family has
 * been read to its cutoff. The walks start at `at` and move it; when the generator returns,
 * `at` holds where each one stopped.
 * Deliveries go first so events they release can go in the same sweep.
 */
function* retentionSteps(store: RetentionStore, opts: RetentionOptions, at: Positions, full: boolean): Generator<Batch, RetentionResult, BatchResult> {
  const { db } = store
  const logged: [string, StreamEvent[]][] = []
  const limit = Math.max(1, Math.floor(opts.batchSize ?? RETENTION_BATCH_SIZE))
  const { now } = opts
  const window = limit * 4
  const s = prepareAll(db, SQL)
  const result: RetentionResult = {
    deliveries: 0,
    events: 0,
    notifications: 0,
    inboxMessages: 0,
    batches: { deliveries: 0, events: 0, notifications: 0, inboxMessages: 0 },
    read: { deliveries: 0, events: 0, notifications: 0 },
    full,
  }
  const eventsBefore = now - opts.eventsMs
  // Fixed for the sweep: the events and notifications walks move only after the deliveries are done.
  const passedEvents = at.events.r
  const passedNotifications = at.notifications.r
  const eventsPassed = passedEvents > 0
  const notificationsPassed = passedNotifications > 0
  const anyPassed = eventsPassed || notificationsPassed
  // Each delivery may release an event or a notification (it refers to one or the other) in the
  // same transaction: half as many deliveries then keep it at `limit` deleted rows. 300k
  // deliveries and their events went in 2.6–2.8 s this way, 2.6–2.9 s when the events walk
  // deletes the events (noisy 2-vCPU box).
  const take = anyPassed ? Math.ceil(limit / 2) : limit

  // One transaction deletes up to `limit` rows: expired successes first, then dead and cancelled.
  // Each batch returns how many rows it deleted, and whether its family has more to look at.
  const arms = [
    { before: now - opts.successMs, wanted: (row: { success: number }) => row.success === 1, at: at.success, done: false },
    { before: now - opts.deadMs, wanted: (row: { success: number }) => row.success === 0, at: at.dead, done: false },
  ]
  const deliveriesBatch = (): [number, boolean] => {
    const rowids: number[] = []
    // The two arms share the transaction's read budget.
    let budget = window
    for (const arm of arms) {
      if (rowids.length >= take || arm.done || budget <= 0) continue
      const rows = s.finished.iterate({ ...arm.at, before: arm.before, window: budget }) as IterableIterator<Position & { success: number }>
      const step = walkWindow(rows, budget, take - rowids.length, arm.wanted, arm.at)
      rowids.push(...step.rowids)
      budget -= step.read
      result.read.deliveries += step.read
      arm.done = step.done
    }
    if (rowids.length === 0) return [0, arms.every((a) => a.done)]
    const gone = s.deleteDeliveries.all(JSON.stringify(rowids)) as { eventId: string | null; notificationId: string | null }[]
    const eventIds = eventsPassed ? gone.flatMap((d) => (d.eventId === null ? [] : [d.eventId])) : []
    // One event lookup per deleted delivery, on top of the window's reads.
    if (eventIds.length > 0) result.events += s.releaseEvents.run({ ids: JSON.stringify(eventIds), r: passedEvents, before: eventsBefore }).changes
    // A fan-out's deliveries share their notification: one lookup per distinct one.
    const notificationIds = notificationsPassed ? [...new Set(gone.flatMap((d) => (d.notificationId === null ? [] : [d.notificationId])))] : []
    if (notificationIds.length > 0) {
      const ids = JSON.stringify(notificationIds)
      result.notifications += s.releaseNotifications.run({ ids, r: passedNotifications, before: eventsBefore }).changes
    }
    return [gone.length, arms.every((a) => a.done)]
  }
  // One window of the events or the notifications walk, by rowid (see the comment on SQL).
  const rowidBatch = (select: Database.Statement, remove: Database.Statement, last: Database.Statement, pos: Position, family: 'events' | 'notifications') => (): [number, boolean] => {
    const rows = select.iterate({ r: pos.r, window }) as IterableIterator<Position & { free: number }>
    const step = walkWindow(rows, window, limit, (row) => row.free === 1, pos, (row) => row.t >= eventsBefore)
    result.read[family] += step.read
    const n = step.rowids.length === 0 ? 0 : remove.run(JSON.stringify(step.rowids)).changes
    // Without AUTOINCREMENT a row gets max(rowid) + 1: had this walk deleted the last rows, the
    // next ones would reuse rowids it has passed. Ending at the last row left avoids it.
    if (step.done) pos.r = Math.min(pos.r, last.pluck().get() as number)
    return [n, step.done]
  }
  const eventsBatch = rowidBatch(s.events, s.deleteEvents, s.lastEvent, at.events, 'events')
  const notificationsBatch = rowidBatch(s.notifications, s.deleteNotifications, s.lastNotification, at.notifications, 'notifications')
  const inboxBatch = (): [number, boolean] => {
    const rows = s.oldInbox.all({ before: now - opts.inboxMs, limit }) as { id: string; userId: string; unread: number }[]
    if (rows.length === 0) return [0, true]
    // The counts move in the same statement as the delete (the inbox_counts_delete trigger).
    const unreadByUser = new Set<string>()
    for (const r of rows) if (r.unread) unreadByUser.add(r.userId)
    const n = s.deleteInbox.run(JSON.stringify(rows.map((r) => r.id))).changes
    for (const userId of unreadByUser) {
      // The replay log and live streams must see the new count, as after any other change.
      if (store.inbox) logged.push([userId, [store.inbox.logUnreadCount(userId, now)]])
    }
    return [n, rows.length < limit]
  }
  const batches: [Family, () => [number, boolean]][] = [
    ['deliveries', deliveriesBatch],
    ['events', eventsBatch],
    ['notifications', notificationsBatch],
    ['inboxMessages', inboxBatch],
  ]
  for (const [family, batch] of batches) {
    for (;;) {
      logged.length = 0
      // The driver runs the batch in one transaction and hands back its result.
      const [n, done] = yield batch
      for (const [userId, streamEvents] of logged) opts.onStreamEvents?.(userId, streamEvents)
      result[family] += n
      result.batches[family]++
      if (done) break
    }
  }
  return result
}

/** One batch of a sweep, run in one transaction: rows it deleted, and whether its family is done. */
type Batch = () => BatchResult
type BatchResult = [number, boolean]

function runSteps(db: Db, steps: Generator<Batch, RetentionResult, BatchResult>): RetentionResult {
  const tx = db.transaction((batch: Batch) => batch())
  let r = steps.next()
  while (!r.done) r = steps.next(tx.immediate(r.value))
  return r.value
}

async function runStepsAsync(store: RetentionStore, steps: Generator<Batch, RetentionResult, BatchResult>): Promise<RetentionResult> {
  const tx = store.db.transaction((batch: Batch) => batch())
  const transact = store.transact ?? ((batch: Batch) => Promise.resolve(tx.immediate(batch)))
  let r = steps.next()
  while (!r.done) {
    const done = await transact(r.value)
    // Between batches the event loop serves API commits and the dispatcher.
    await new Promise<void>((resolve) => setImmediate(resolve))
    r = steps.next(done)
  }
  return r.value
}

/**
 * Deletes expired rows (docs/operations.md) in transactions of at most `batchSize` rows, walking
 * everything from the beginning. Synchronous: it holds the event loop for the whole sweep, so a
 * server should prefer a runner's `sweepAsync`.
 */
export function sweepRetention(store: RetentionStore, opts: RetentionOptions): RetentionResult {
  return runSteps(store.db, retentionSteps(store, opts, startPositions(), true))
}

/**
 * The same sweep, yielding to the event loop between batches so API commits and the
 * dispatcher interleave with it: ingest waits for at most one batch (~1,000 row deletes).
 */
export async function sweepRetentionAsync(store: RetentionStore, opts: RetentionOptions): Promise<RetentionResult> {
  return runStepsAsync(store, retentionSteps(store, opts, startPositions(), true))
}

/** How often a runner walks from the beginning anyway, by the sweeps' `now`: once a day. */
export const RETENTION_FULL_WALK_MS = 86_400_000

/** Options of `createRetentionRunner`. */
export interface RetentionRunnerOptions {
  /** A sweep this long (by `now`) after the last full one walks from the beginning; default one day. */
  fullWalkEveryMs?: number
}

/** Sweeps of one store that start where the previous sweep of the same runner stopped. */
export interface RetentionRunner {
  /** One sweep, synchronous (see `sweepRetention`). */
  sweep(opts: RetentionOptions): RetentionResult
  /** One sweep, yielding between batches (see `sweepRetentionAsync`); run one at a time. */
  sweepAsync(opts: RetentionOptions): Promise<RetentionResult>
}

/**
 * A retention runner: it remembers in memory, after each completed sweep, where each keyset
 * walk stopped, and the next sweep starts there, so rows kept (dead rows inside the success
 * window's walk, old events and notifications that still have deliveries) are read once, not
 * every hour.
 *
 * Why that is safe: a finished walk has handled every row at or before its position. A row only
 * enters `deliveries_finished` with completed_at = the writer's now (settle, expiry, cancel,
 * kill, group finish); redeliver and recover set it NULL, and nothing else writes it. So a row
 * lands before a position only if its writer's clock was more than the window behind the sweep
 * that set it. Events and notifications are walked by rowid, and only lose deliveries to this
 * sweep, which deletes (in the same transaction) the ones its deliveries leave bare if their
 * walk has passed them; each walk ends at the last row left, so new rows get rowids after it. A skipped row would only stay too
 * long, never go too early: the cutoffs and conditions are unchanged. As a safety net a sweep walks from the beginning
 * when `now` went backwards, the windows changed, or `fullWalkEveryMs` passed since the last
 * full walk; and the first sweep of a process always does (a restart forgets the positions).
 */
export function createRetentionRunner(store: RetentionStore, options: RetentionRunnerOptions = {}): RetentionRunner {
  const every = options.fullWalkEveryMs ?? RETENTION_FULL_WALK_MS
  type Walked = Pick<RetentionOptions, 'now' | 'successMs' | 'deadMs' | 'eventsMs'> & { at: Positions }
  let last: Walked | null = null
  let lastFull = Number.NEGATIVE_INFINITY
  const begin = (opts: RetentionOptions): { at: Positions; full: boolean } => {
    const prev = last
    // Taken by this sweep: if it fails, its batches may have freed events before the old
    // events position without deleting them, so the next sweep walks from the beginning.
    last = null
    const resume =
      prev !== null &&
      opts.now >= prev.now &&
      opts.now - lastFull < every &&
      opts.successMs === prev.successMs &&
      opts.deadMs === prev.deadMs &&
      opts.eventsMs === prev.eventsMs
    return resume ? { at: prev.at, full: false } : { at: startPositions(), full: true }
  }
  // Only a sweep that ran to its end leaves positions.
  const end = ({ now, successMs, deadMs, eventsMs }: RetentionOptions, at: Positions, full: boolean): void => {
    last = { now, successMs, deadMs, eventsMs, at }
    if (full) lastFull = now
  }
  return {
    sweep(opts) {
      const { at, full } = begin(opts)
      const result = runSteps(store.db, retentionSteps(store, opts, at, full))
      end(opts, at, full)
      return result
    },
    async sweepAsync(opts) {
      const { at, full } = begin(opts)
      const result = await runStepsAsync(store, retentionSteps(store, opts, at, full))
      end(opts, at, full)
      return result
    },
  }
}
