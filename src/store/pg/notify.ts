/**
 * LISTEN/NOTIFY between nodes (docs/architecture.md): new due work on one node wakes the others, and inbox
 * stream events reach the streams open on other nodes. One dedicated connection per node listens
 * (a pool connection would go back to the pool and stop hearing); the due notification
 * (`NOTIFY_DUE_SQL`) is sent in the writer's own transaction, with its COMMIT, or after a statement
 * that committed on its own; the inbox's by the triggers that write its stream (schema-directory.ts).
 * PostgreSQL delivers a notification only when (and if) the transaction that sent it commits.
 *
 * A notification is a hint, never the data: a listener reads the database when woken. While
 * the listening connection is down, notifications are lost, so after every reconnect each
 * listener is called with `null`, meaning "you may have missed some: read the database".
 */
import pg from 'pg'
import { backoffDelayMs, RECONNECT_BACKOFF, type BackoffPolicy } from '../../lib/backoff.js'
import type { Rng } from '../../lib/clock.js'

/** The channel on which commits that made deliveries due say so (the payload is empty or a hint). */
export const DUE_CHANNEL = 'postbox_due'

/** Called with each notification's payload, or null after a reconnect (some may have been missed). */
export type PgNotifyListener = (payload: string | null) => void

/** One node's listening connection. */
export interface PgNotifier {
  /** Listens on `channel`; returns the function that stops this listener (the last one UNLISTENs). */
  on(channel: string, listener: PgNotifyListener): () => void
  /** Resolves once every channel asked for so far is being listened to on a live connection. */
  ready(): Promise<void>
  /** True while the listening connection is up (false from its loss until a reconnect has listened again). */
  listening(): boolean
  close(): Promise<void>
}

/** Options of `createPgNotifier`. */
export interface PgNotifierOptions {
  /** The connection failed or a reconnect failed; it is tried again after the backoff's wait. */
  onError?: (err: Error) => void
  /** Waits between reconnect attempts, growing with consecutive failures; default RECONNECT_BACKOFF. */
  backoff?: BackoffPolicy
  /** The jitter's randomness; default Math.random. */
  rng?: Rng
}

/** The listening connection's application_name (pg_stat_activity shows one per node). */
export const LISTENER_NAME = 'postbox-listen'

const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/

/** The statement that says rows were made due (no parameters, so it can share the COMMIT's round trip). */
export const NOTIFY_DUE_SQL = `SELECT pg_notify('${DUE_CHANNEL}', '')`

/**
 * A listening connection with the same settings as `pool`'s (URL, parsers), reconnecting on
 * failure: the first attempt soon after the loss, then with the backoff's growing waits until one
 * connects and listens again.
 */
export function createPgNotifier(pool: pg.Pool, opts: PgNotifierOptions = {}): PgNotifier {
  const policy = opts.backoff ?? RECONNECT_BACKOFF
  const rng = opts.rng ?? Math.random
  // Consecutive failed attempts since the connection was last up (0 while it is).
  let failures = 0
  const listeners = new Map<string, Set<PgNotifyListener>>()
  let client: pg.Client | null = null
  let connecting: Promise<void> | null = null
  let closed = false
  let timer: NodeJS.Timeout | null = null
  let everConnected = false

  const emit = (channel: string, payload: string | null): void => {
    for (const l of listeners.get(channel) ?? []) {
      try {
        l(payload)
      } catch (err) {
        opts.onError?.(err instanceof Error ? err : new Error(String(err)))
      }
    }
  }
  const lost = (c: pg.Client, err?: Error): void => {
    if (client !== c) return
    client = null
    if (err) opts.onError?.(err)
    c.end().catch(() => {})
    schedule()
  }
  const schedule = (): void => {
    if (closed || timer) return
    failures++
    timer = setTimeout(() => {
      timer = null
      void connect().catch(() => {})
    }, backoffDelayMs(failures, rng, policy))
    timer.unref()
  }
  const connect = (): Promise<void> =>
    (connecting ??= (async () => {
      const c = new pg.Client({ ...pool.options, application_name: LISTENER_NAME })
      c.on('error', (err) => lost(c, err))
      c.on('end', () => lost(c))
      c.on('notification', (m) => emit(m.channel, m.payload ?? ''))
      try {
        await c.connect()
        for (const ch of listeners.keys()) await c.query(`LISTEN ${ch}`)
      } catch (err) {
        c.removeAllListeners('end')
        await c.end().catch(() => {})
        opts.onError?.(err instanceof Error ? err : new Error(String(err)))
        schedule()
        throw err
      } finally {
        connecting = null
      }
      if (closed) {
        await c.end().catch(() => {})
        return
      }
      client = c
      failures = 0
      if (everConnected) for (const ch of listeners.keys()) emit(ch, null)
      everConnected = true
    })())

  return {
    on(channel, listener) {
      if (!CHANNEL.test(channel)) throw new Error(`not a channel name: ${channel}`)
      let set = listeners.get(channel)
      if (!set) {
        listeners.set(channel, (set = new Set()))
        const c = client
        if (c) c.query(`LISTEN ${channel}`).catch((err: Error) => lost(c, err))
        else if (!connecting) void connect().catch(() => {})
      }
      set.add(listener)
      return () => {
        set.delete(listener)
        if (set.size === 0 && listeners.get(channel) === set) {
          listeners.delete(channel)
          client?.query(`UNLISTEN ${channel}`).catch(() => {})
        }
      }
    },
    async ready() {
      while (!closed && !client) await (connecting ?? connect())
      // A LISTEN sent by `on` is queued on the connection before this round trip completes.
      if (client) await client.query('SELECT 1')
    },
    listening: () => client !== null,
    async close() {
      closed = true
      if (timer) clearTimeout(timer)
      const c = client
      client = null
      if (c) {
        c.removeAllListeners('end')
        await c.end().catch(() => {})
      }
    },
  }
}
