import { openDatabase, type Db } from './db.js'
import { type OpenOptions } from '../schema.js'
import { createDeliveriesStore } from './deliveries.js'
import { type DeliveriesStore } from '../deliveries.js'
import { createEventsStore } from './events.js'
import { type EventsStore } from '../events.js'
import { createDirectoryStore } from './directory.js'
import { type DirectoryStore } from '../directory.js'
import { createNotificationsStore } from './notifications.js'
import { type NotificationsStore } from '../notifications.js'
import { createInboxStore } from './inbox.js'
import { type InboxStore } from '../inbox.js'
import { createEndpointsStore } from './endpoints.js'
import { type EndpointsStore } from '../endpoints.js'
import { createKeysStore } from './keys.js'
import { type KeysStore } from '../keys.js'
import { createStatsStore } from './stats.js'
import { type StatsStore } from '../stats.js'
import { createClockRepairStore } from './clock-repair.js'
import { type ClockRepairStore } from '../clock-repair.js'
import { createLocksStore } from './locks.js'
import { type LocksStore } from '../locks.js'
import { createAppsStore } from './apps.js'
import { type AppsStore } from '../apps.js'
import { createEventTypesStore } from './event-types.js'
import { type EventTypesStore } from '../event-types.js'
import { createUserListStore } from './user-list.js'
import { type UserListStore } from '../user-list.js'
import { createReceiptsStore } from './receipts.js'
import { type ReceiptsStore } from '../receipts.js'
import { createRequestsStore } from './requests.js'
import { type RequestsStore } from '../requests.js'

/**
 * Every SQLite table family behind one object, synchronous (better-sqlite3). Only store code,
 * backup, the checkpointer and SQL tests use it; services see the asynchronous `Store`.
 */
export interface SqliteStore {
  readonly db: Db
  readonly path: string
  readonly deliveries: DeliveriesStore
  readonly events: EventsStore
  readonly directory: DirectoryStore
  readonly notifications: NotificationsStore
  readonly inbox: InboxStore
  readonly endpoints: EndpointsStore
  readonly keys: KeysStore
  readonly stats: StatsStore
  readonly clockRepair: ClockRepairStore
  readonly locks: LocksStore
  readonly apps: AppsStore
  readonly eventTypes: EventTypesStore
  readonly userList: UserListStore
  readonly receipts: ReceiptsStore
  /** Durable HTTP requests (docs/requests.md): their targets, over `request` deliveries. */
  readonly requests: RequestsStore
  /**
   * Runs `fn` in one IMMEDIATE transaction. When it enqueued due work, the wake listeners run
   * after the commit (never before: a dispatcher must not look for rows it cannot see yet).
   */
  tx<T>(fn: () => T): T
  /**
   * Runs the asynchronous `fn` in one IMMEDIATE transaction (nested: in a savepoint), with the
   * same wake rule as `tx`. The caller keeps every other use of the connection out until it
   * settles (the asynchronous Store's gate does).
   */
  txAsync<T>(fn: () => Promise<T>): Promise<T>
  /** Registers a listener called after a commit that created due rows; returns an unsubscribe. */
  onDue(listener: () => void): () => void
  /** Closes the connection (after a WAL checkpoint). */
  close(): void
}

/** Opens the database at `path` and builds every synchronous table store over it. */
export function openSqliteStore(path: string, opts: OpenOptions = {}): SqliteStore {
  const db = openDatabase(path, opts)
  const listeners = new Set<() => void>()
  let dueInTx = false
  let depth = 0
  // One wrapper for every tx: db.transaction(fn) per call measured ~8 µs of CPU per commit.
  const runTx = db.transaction((fn: () => unknown) => fn())
  const markDue = (): void => {
    if (depth > 0) dueInTx = true
    else for (const l of listeners) l()
  }
  const endpoints = createEndpointsStore(db)
  const deliveries = createDeliveriesStore(db, markDue)
  // After a rollback nothing the outermost transaction enqueued exists, and endpoint caches may
  // hold what the rolled-back work read or wrote (a disable, a new endpoint): they reload.
  const rolledBack = (outermost: boolean): void => {
    if (outermost) dueInTx = false
    endpoints.invalidate()
  }
  // After the outermost commit, the wake listeners run when it enqueued due work.
  const committed = (): void => {
    if (depth !== 0 || !dueInTx) return
    dueInTx = false
    for (const l of listeners) l()
  }
  const store: SqliteStore = {
    db,
    path,
    deliveries,
    requests: createRequestsStore(db, deliveries),
    events: createEventsStore(db),
    directory: createDirectoryStore(db),
    notifications: createNotificationsStore(db),
    inbox: createInboxStore(db),
    endpoints,
    keys: createKeysStore(db),
    stats: createStatsStore(db),
    clockRepair: createClockRepairStore(db),
    locks: createLocksStore(db),
    apps: createAppsStore(db),
    eventTypes: createEventTypesStore(db),
    userList: createUserListStore(db),
    receipts: createReceiptsStore(db),
    tx<T>(fn: () => T): T {
      depth++
      let result: T
      try {
        result = runTx.immediate(fn) as T
      } catch (err) {
        rolledBack(depth === 1)
        throw err
      } finally {
        depth--
      }
      committed()
      return result
    },
    async txAsync<T>(fn: () => Promise<T>): Promise<T> {
      const nested = depth > 0
      const name = `pb_${depth}`
      db.exec(nested ? `SAVEPOINT ${name}` : 'BEGIN IMMEDIATE')
      depth++
      let result: T
      try {
        result = await fn()
        db.exec(nested ? `RELEASE ${name}` : 'COMMIT')
      } catch (err) {
        if (db.inTransaction) db.exec(nested ? `ROLLBACK TO ${name}; RELEASE ${name}` : 'ROLLBACK')
        rolledBack(!nested)
        throw err
      } finally {
        depth--
      }
      committed()
      return result
    },
    onDue(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    close() {
      if (!db.open) return
      try {
        db.pragma('wal_checkpoint(TRUNCATE)')
      } catch {
        // a busy checkpoint is not a reason to fail a close
      }
      db.close()
    },
  }
  return store
}
