import { openDatabase, type Db, type OpenOptions } from './db.js'
import { liftSync, type Async } from './contract.js'
import { createDeliveriesStore, type DeliveriesStore } from './deliveries.js'
import { createEventsStore, type EventsStore } from './events.js'
import { createDirectoryStore, type DirectoryStore } from './directory.js'
import { createNotificationsStore, type NotificationsStore } from './notifications.js'
import { createInboxStore, type InboxStore } from './inbox.js'
import { createEndpointsStore, type EndpointsStore } from './endpoints.js'
import { createKeysStore, type KeysStore } from './keys.js'
import { createStatsStore, type StatsStore } from './stats.js'
import { createClockRepairStore, type ClockRepairStore } from './clock-repair.js'
import { createLocksStore, type LocksStore } from './locks.js'
import { createAppsStore, type AppsStore } from './apps.js'
import { createEventTypesStore, type EventTypesStore } from './event-types.js'
import { createUserListStore, type UserListStore } from './user-list.js'
import { createReceiptsStore, type ReceiptsStore } from './receipts.js'
import { createRequestsStore, type RequestsStore } from './requests.js'

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

/**
 * The store contract every service uses (docs/architecture.md): every table family, asynchronous,
 * on SQLite (the default) or PostgreSQL.
 */
export interface Store {
  readonly backend: 'sqlite' | 'postgres'
  /** The SQLite file, or the PostgreSQL URL without its password. */
  readonly path: string
  readonly deliveries: Async<DeliveriesStore>
  readonly events: Async<EventsStore>
  readonly directory: Async<DirectoryStore>
  readonly notifications: Async<NotificationsStore>
  readonly inbox: Async<InboxStore>
  readonly endpoints: Async<EndpointsStore>
  readonly keys: Async<KeysStore>
  readonly stats: Async<StatsStore>
  readonly clockRepair: Async<ClockRepairStore>
  /** SQLite only: the lease row that lets one process serve a file (docs/operations.md). */
  readonly locks?: Async<LocksStore>
  readonly apps: Async<AppsStore>
  readonly eventTypes: Async<EventTypesStore>
  readonly userList: Async<UserListStore>
  readonly receipts: Async<ReceiptsStore>
  /** Durable HTTP requests (docs/requests.md): their targets, over `request` deliveries. */
  readonly requests: Async<RequestsStore>
  /**
   * Runs `fn` in one transaction and resolves with its result after the commit (rolled back when
   * it throws). `fn` uses `s`, the transaction's store, never the outer one (on SQLite a call on
   * the outer store waits for the transaction to end), and awaits nothing but `s`'s calls: no
   * network inside a transaction. Wake listeners run after the commit when it enqueued due work.
   */
  tx<T>(fn: (s: Store) => Promise<T>): Promise<T>
  /** Registers a listener called after a commit that created due rows; returns an unsubscribe. */
  onDue(listener: () => void): () => void
  /**
   * PostgreSQL only: called with `(userId, lastSeq)` when any node committed inbox stream events
   * for the user, so a node holding that user's live stream replays them, and with `null` after
   * the listening connection came back (notices may have been missed: every stream catches up
   * from the database); returns an unsubscribe.
   */
  readonly onInboxStream?: (listener: (notice: { userId: string; lastSeq: number } | null) => void) => () => void
  /** Closes the connections (SQLite: after a WAL checkpoint), once any open transaction ended. */
  close(): Promise<void>
  /** SQLite only: the synchronous store on the same connection (backup, checkpointer, SQL tests). */
  readonly sqlite: SqliteStore | undefined
}

/** The table families of a Store, by property name. */
const FAMILIES = [
  'deliveries', 'events', 'directory', 'notifications', 'inbox', 'endpoints', 'keys', 'stats', 'clockRepair',
  'locks', 'apps', 'eventTypes', 'userList', 'receipts', 'requests',
] as const satisfies readonly (keyof Store & keyof SqliteStore)[]

/** A call that waited this long for an open transaction is a callback using the outer store. */
const GATE_WAIT_MS = 10_000

/**
 * Opens the SQLite database at `path` as the asynchronous Store. One connection serves every
 * call; while a transaction is open, calls from outside it wait for it to end (they would
 * otherwise run inside it, and be rolled back with it).
 */
export function openStore(path: string, opts: OpenOptions = {}): Store {
  const sync = openSqliteStore(path, opts)
  // The open transaction's end, or null. Every check of it and the call or BEGIN that follows
  // happen in one synchronous step, so nothing slips in between.
  let open: Promise<void> | null = null
  const later = <R>(run: () => Promise<R>, since: number): Promise<R> =>
    open!.then(() => {
      if (open === null) return run()
      if (Date.now() - since > GATE_WAIT_MS) throw new Error('a store call waited 10 s for a transaction to end: a transaction callback used the outer store instead of its own')
      return later(run, since)
    })
  const gated = <T extends object>(family: T): Async<T> => {
    const lifted = liftSync(family) as Record<string, unknown>
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(lifted)) {
      if (typeof v !== 'function') {
        out[k] = v
        continue
      }
      const f = v as (...a: unknown[]) => Promise<unknown>
      out[k] = (...args: unknown[]) => (open === null ? f(...args) : later(() => f(...args), Date.now()))
    }
    return out as Async<T>
  }
  const build = (wrap: <T extends object>(f: T) => Async<T>): Record<string, unknown> =>
    Object.fromEntries(FAMILIES.map((name) => [name, wrap(sync[name])]))
  const common = {
    backend: 'sqlite' as const,
    path: sync.path,
    sqlite: sync,
    onDue: (listener: () => void) => sync.onDue(listener),
  }
  // The transaction's own store: calls run at once on the connection; a nested tx is a savepoint.
  const inner = {
    ...common,
    ...build(liftSync),
    tx: <T>(fn: (s: Store) => Promise<T>): Promise<T> => sync.txAsync(() => fn(inner)),
    close: (): Promise<void> => Promise.reject(new Error('close() inside a transaction')),
  } as Store
  const store = {
    ...common,
    ...build(gated),
    tx<T>(fn: (s: Store) => Promise<T>): Promise<T> {
      const begin = (): Promise<T> => {
        let end!: () => void
        open = new Promise<void>((resolve) => (end = resolve))
        return sync.txAsync(() => fn(inner)).finally(() => {
          open = null
          end()
        })
      }
      return open === null ? begin() : later(begin, Date.now())
    },
    close(): Promise<void> {
      const shut = async (): Promise<void> => sync.close()
      return open === null ? shut() : later(shut, Date.now())
    },
  } as Store
  return store
}
