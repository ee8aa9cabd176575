/**
 * The SQLite backend as the asynchronous Store (docs/architecture.md, "The store"): one connection
 * behind a gate that keeps calls from outside an open transaction out of it.
 */
import { liftSync, type Async } from '../contract.js'
import type { Store } from '../index.js'
import type { OpenOptions } from '../schema.js'
import { openSqliteStore, type SqliteStore } from './index.js'

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
export function openSqliteAsyncStore(path: string, opts: OpenOptions = {}): Store {
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
