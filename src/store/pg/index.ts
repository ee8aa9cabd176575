/**
 * The Store contract on PostgreSQL (docs/architecture.md, docs/operations.md): every table
 * family over one pool, transactions on one pooled connection, and LISTEN/NOTIFY so a commit
 * that made work due on any node wakes every node's dispatcher.
 */
import type pg from 'pg'
import type { Async } from '../contract.js'
import type { DeliveriesStore } from '../deliveries.js'
import type { OpenOptions } from '../schema.js'
import type { Store } from '../index.js'
import { createPgAdminFamilies, newPgAdminState, type PgAdminState } from './admin-families.js'
import { atomically } from './atomic.js'
import { createPgDeliveriesStore } from './deliveries.js'
import { newPgClaimState, type PgClaimState } from './delivery-claim.js'
import { createPgDirectoryStore } from './directory.js'
import { createPgEndpointsStore } from './endpoints.js'
import { createPgEventsStore } from './events.js'
import { createPgInboxStore } from './inbox.js'
import { migratePg } from './migrations.js'
import { createPgNotificationsStore } from './notifications.js'
import { createPgNotifier, DUE_CHANNEL, NOTIFY_DUE_SQL, type PgNotifier } from './notify.js'
import { createPgPool, redactPgUrl } from './pool.js'
import type { PgQueryable } from './queryable.js'
import { createPgReceiptsStore } from './receipts.js'
import { createPgRequestsStore } from './requests.js'
import { INBOX_NOTIFY_CHANNEL } from './schema-directory.js'
import { createPgUserListStore } from './user-list.js'
import { sweepPgRetention } from './retention.js'
import type { RetentionOptions, RetentionResult } from '../retention.js'

/** Options of `openPgStore`: the schema rule of `openStore`, the pool size, and where connection errors go. */
export interface PgStoreOptions extends Pick<OpenOptions, 'schema' | 'onMigrate'> {
  /** Most connections this node opens (its pool; the listening connection is one more). */
  poolMax?: number
  /** A connection error that was handled (an idle connection dropped, the listener reconnecting). */
  onError?: (err: Error) => void
  /** Named prepared statements (default true; createPgPool). */
  preparedStatements?: boolean
}

/** The families of one PostgreSQL store over `q` (the pool, or one transaction's connection). */
export function pgFamilies(q: PgQueryable, admin: PgAdminState, markDue: () => void, claims?: PgClaimState) {
  const deliveries: Async<DeliveriesStore> = createPgDeliveriesStore(q, markDue, claims)
  return {
    deliveries,
    requests: createPgRequestsStore(q, deliveries),
    events: createPgEventsStore(q),
    endpoints: createPgEndpointsStore(q),
    directory: createPgDirectoryStore(q),
    notifications: createPgNotificationsStore(q),
    inbox: createPgInboxStore(q),
    receipts: createPgReceiptsStore(q),
    userList: createPgUserListStore(q),
    ...createPgAdminFamilies(q, admin, (fn) => atomically(q, fn)),
  }
}

/** The families as the Store contract names them. */
export type PgFamilies = ReturnType<typeof pgFamilies>

/** The Store on PostgreSQL, with its pool for PostgreSQL-only code (retention, checks). */
export interface PgStore extends Store {
  readonly backend: 'postgres'
  readonly pool: pg.Pool
}

/**
 * Opens the PostgreSQL database at `url` (migrating it per `opts.schema`, under the migration
 * lock) and builds every family over one pool. A commit that made rows due wakes this node's
 * listeners at once and every other node through NOTIFY (sent inside the transaction, so it is
 * delivered only if it commits).
 */
export async function openPgStore(url: string, opts: PgStoreOptions = {}): Promise<PgStore> {
  const pool = createPgPool(url, {
    ...(opts.poolMax !== undefined ? { max: opts.poolMax } : {}),
    ...(opts.onError ? { onError: opts.onError } : {}),
    ...(opts.preparedStatements !== undefined ? { preparedStatements: opts.preparedStatements } : {}),
  })
  try {
    await migratePg(pool, { ...(opts.schema ? { schema: opts.schema } : {}), ...(opts.onMigrate ? { onMigrate: opts.onMigrate } : {}) })
  } catch (err) {
    await pool.end().catch(() => {})
    throw err
  }
  const notifier: PgNotifier = createPgNotifier(pool, opts.onError ? { onError: opts.onError } : {})
  const dueListeners = new Set<() => void>()
  const wakeLocal = (): void => {
    for (const l of dueListeners) l()
  }
  const stopDue = notifier.on(DUE_CHANNEL, () => wakeLocal())
  const admin = newPgAdminState()
  const claims = newPgClaimState()
  // Outside a transaction a family's statement has committed when it returns, or (settle and the
  // operator actions) its own transaction commits before the call resolves: the wake waits for that.
  let poolDue = false
  const poolFamilies = pgFamilies(pool, admin, () => (poolDue = true), claims)
  const afterPoolCall = <T extends object>(family: T): T => {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(family)) {
      out[k] =
        typeof v === 'function'
          ? async (...args: unknown[]) => {
              const r: unknown = await (v as (...a: unknown[]) => Promise<unknown>)(...args)
              if (poolDue) {
                poolDue = false
                wakeLocal()
                void pool.query(NOTIFY_DUE_SQL).catch((err: unknown) => opts.onError?.(err instanceof Error ? err : new Error(String(err))))
              }
              return r
            }
          : v
    }
    return out as T
  }
  let closed = false
  const txOn = async <T>(client: PgQueryable, fn: (s: Store) => Promise<T>, store: PgStore): Promise<{ out: T; due: boolean }> => {
    let due = false
    const families = pgFamilies(client, admin, () => (due = true), claims)
    const inner: PgStore = {
      ...store,
      ...families,
      // A nested transaction is a savepoint on the same connection.
      async tx<U>(f: (s: Store) => Promise<U>): Promise<U> {
        const name = `pb_sp_${Math.random().toString(36).slice(2, 10)}`
        await client.query(`SAVEPOINT ${name}`)
        try {
          const r = await f(inner)
          await client.query(`RELEASE SAVEPOINT ${name}`)
          return r
        } catch (err) {
          await client.query(`ROLLBACK TO SAVEPOINT ${name}`)
          throw err
        }
      },
    }
    const out = await fn(inner)
    return { out, due }
  }
  const store: PgStore = {
    backend: 'postgres',
    path: redactPgUrl(url),
    pool,
    sqlite: undefined,
    ...poolFamilies,
    deliveries: afterPoolCall(poolFamilies.deliveries),
    requests: afterPoolCall(poolFamilies.requests),
    // Ready (/readyz) means writable and listening: a node whose LISTEN connection is still
    // coming back would hear of other nodes' work only at its poll ticks.
    stats: {
      ...poolFamilies.stats,
      async probeWritable() {
        await poolFamilies.stats.probeWritable()
        if (!closed && !notifier.listening()) throw Object.assign(new Error('the listening connection is reconnecting'), { code: '08006' })
      },
    },
    async tx<T>(fn: (s: Store) => Promise<T>): Promise<T> {
      // The notification goes with the COMMIT: PostgreSQL delivers it only if the commit succeeds.
      const { out, due } = await atomically(pool, (client) => txOn(client, fn, store), (r) => (r.due ? NOTIFY_DUE_SQL : null))
      if (due) wakeLocal()
      return out
    },
    onDue(listener: () => void) {
      dueListeners.add(listener)
      return () => dueListeners.delete(listener)
    },
    onInboxStream(listener: (notice: { userId: string; lastSeq: number } | null) => void) {
      return notifier.on(INBOX_NOTIFY_CHANNEL, (payload) => {
        if (payload === null) return listener(null)
        const at = payload.indexOf(':')
        const seq = Number(payload.slice(0, at))
        if (at > 0 && Number.isFinite(seq)) listener({ userId: payload.slice(at + 1), lastSeq: seq })
      })
    },
    async close() {
      if (closed) return
      closed = true
      stopDue()
      await notifier.close()
      await pool.end()
    },
  }
  await notifier.ready()
  return store
}

/** The retention sweep of a PostgreSQL store (docs/operations.md): batches in transactions of their own. */
export function pgRetention(store: Store): { sweepAsync(opts: RetentionOptions): Promise<RetentionResult> } {
  const pool = (store as PgStore).pool
  if (store.backend !== 'postgres' || !pool) throw new Error('the PostgreSQL retention sweep needs a PostgreSQL store')
  return { sweepAsync: (opts) => sweepPgRetention({ transact: (fn) => atomically(pool, fn), inbox: (q) => createPgInboxStore(q) }, opts) }
}
