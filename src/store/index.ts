import type { Async } from './contract.js'
import { type DeliveriesStore } from './deliveries.js'
import { type EventsStore } from './events.js'
import { type DirectoryStore } from './directory.js'
import { type NotificationsStore } from './notifications.js'
import { type InboxStore } from './inbox.js'
import { type EndpointsStore } from './endpoints.js'
import { type KeysStore } from './keys.js'
import { type StatsStore } from './stats.js'
import { type ClockRepairStore } from './clock-repair.js'
import { type LocksStore } from './locks.js'
import { type AppsStore } from './apps.js'
import { type EventTypesStore } from './event-types.js'
import { type UserListStore } from './user-list.js'
import { type ReceiptsStore } from './receipts.js'
import { type RequestsStore } from './requests.js'
import type { SqliteStore } from './sqlite/index.js'
import { openSqliteAsyncStore } from './sqlite/async-store.js'
import { type OpenOptions } from './schema.js'
import type { PgStoreOptions } from './pg/index.js'
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

/**
 * Opens the SQLite database at `path` as the asynchronous Store. PostgreSQL is opened with
 * `openStoreAt` (a `postgres://` URL), which picks the backend from its target.
 */
export function openStore(path: string, opts: OpenOptions = {}): Store {
  return openSqliteAsyncStore(path, opts)
}

/** Options of `openStoreAt`: SQLite's open options, and PostgreSQL's pool settings when the target is a URL. */
export type OpenAtOptions = OpenOptions & PgStoreOptions

/**
 * Opens the store at `target`: PostgreSQL for a `postgres://` or `postgresql://` URL (its driver
 * is imported only then, so a server on SQLite never loads `pg`), else the SQLite file.
 */
export async function openStoreAt(target: string, opts: OpenAtOptions = {}): Promise<Store> {
  if (/^postgres(ql)?:\/\//i.test(target)) {
    const { openPgStore } = await import('./pg/index.js')
    return openPgStore(target, opts)
  }
  return openStore(target, opts)
}
