/**
 * `pb.transaction(fn)` (SQLite library mode; docs/outbox.md): the application's own
 * statements and Postbox's sends in one transaction on Postbox's connection, so "the order is
 * paid" and "tell the world" commit together or not at all.
 */
import type { Config } from './config.js'
import type { DispatchObserver } from './delivery/channel.js'
import { AppError } from './errors.js'
import type { Clock } from './lib/clock.js'
import type { Log } from './log.js'
import { requireApp } from './apps/service.js'
import type { InboxStreamHub } from './notify/inbox-stream.js'
import { createNotificationService, type NotificationService } from './notify/notification-service.js'
import { createPipeline } from './notify/pipeline.js'
import type { Store } from './store/index.js'
import { createAppSql, type AppRunResult, type AppSql } from './store/sqlite/app-sql.js'
import type { RequestService } from './webhooks/requests.js'
import { createWebhookService } from './webhooks/service.js'
import type { WebhookService } from './webhooks/types.js'

/** The application's SQL as `pb.transaction` hands it out: the calls of `AppSql`, each awaited in turn. */
export interface TransactionSql {
  /** Runs a statement on the application's own tables; resolves with `{ changes, lastInsertRowid }`. */
  run(sql: string, ...params: unknown[]): Promise<AppRunResult>
  /** The first row of a query, or undefined. */
  get<R = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<R | undefined>
  /** Every row of a query. */
  all<R = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<R[]>
}

/** What `fn` gets: the application's SQL and Postbox's sends, all in the one open transaction. */
export interface Transaction {
  readonly sql: TransactionSql
  /** As `pb.events.send` / `sendMany`: the same validation, errors and answers. */
  readonly events: Pick<WebhookService['events'], 'send' | 'sendMany'>
  /** As `pb.notifications.send`. */
  readonly notifications: Pick<NotificationService, 'send'>
  /** As `pb.requests.create` (`send` is its name here, beside the other sends). */
  readonly requests: { send: RequestService['create'] }
}

/** What the transaction runner needs from the Postbox it belongs to. */
export interface TransactionDeps {
  store: Store
  config: Config
  clock: Clock
  log: Log
  requests: RequestService
  /** The live inbox streams: messages a transaction wrote reach them after its commit only. */
  hub: InboxStreamHub
  observer?: DispatchObserver
}

/** The error a context used outside its transaction (after it ended, or a call not awaited) throws. */
const ended = (): AppError =>
  new AppError('transaction_ended', 409, 'this pb.transaction has ended: use its context only inside the callback, and await every call before returning')

/**
 * Builds `pb.transaction`. On SQLite, `fn` runs inside one IMMEDIATE transaction on Postbox's
 * connection (the Store's gate keeps every other call out until it ends); its context's calls
 * run one after another, each a savepoint for the sends, as a library call would. Live inbox
 * events and the metrics of inbox deliveries written are held until the commit and dropped on a
 * rollback; the dispatcher is woken by the commit, as after any send. On PostgreSQL it throws:
 * there, the application enqueues with Postbox's SQL functions in its own transaction (docs/outbox.md).
 */
export function createTransactionRunner(deps: TransactionDeps): <T>(fn: (tx: Transaction) => Promise<T>) => Promise<T> {
  const { store } = deps
  // One transaction at a time (the gate serialises them): its store and its after-commit work.
  let current: { s: Store; after: (() => void)[] } | null = null
  const open = (): { s: Store; after: (() => void)[] } => {
    if (current === null) throw ended()
    return current
  }
  // The services of the context run on whichever transaction is open, through this store.
  const routed = new Proxy({} as Store, { get: (_t, k) => Reflect.get(open().s, k) as unknown })
  const deferredHub: InboxStreamHub = {
    subscribe: (...a) => deps.hub.subscribe(...a),
    publish: (userId, events) => open().after.push(() => deps.hub.publish(userId, events)),
    count: (userId) => deps.hub.count(userId),
    endAll: () => deps.hub.endAll(),
  }
  const observer = deps.observer
  const deferredObserver: DispatchObserver | undefined = observer && {
    attempt: (...a) => open().after.push(() => observer.attempt(...a)),
  }
  let appSql: AppSql | null = null
  let services: { webhooks: WebhookService; notifications: NotificationService } | null = null
  const servicesOf = (): NonNullable<typeof services> => {
    services ??= {
      // rng is not used by the webhook service's event path; Math.random fills its slot.
      webhooks: createWebhookService({ store: routed, config: deps.config, clock: deps.clock, rng: Math.random, log: deps.log }),
      notifications: createNotificationService({
        store: routed,
        accept: createPipeline({ store: routed, config: deps.config, clock: deps.clock, log: deps.log, hub: deferredHub, observer: deferredObserver }),
        requireApp: async (appId) => void (await requireApp(routed, appId)),
      }),
    }
    return services
  }

  return async <T>(fn: (tx: Transaction) => Promise<T>): Promise<T> => {
    const sqlite = store.sqlite
    if (store.backend !== 'sqlite' || sqlite === undefined) {
      throw new AppError(
        'unsupported_backend',
        409,
        "pb.transaction runs on SQLite only; on PostgreSQL, enqueue inside your own transaction with Postbox's SQL functions (postbox_send_event …, docs/outbox.md)",
      )
    }
    const app = (appSql ??= createAppSql(sqlite.db))
    const after: (() => void)[] = []
    const result = await store.tx(async (s) => {
      const mine = { s, after }
      current = mine
      let live = true
      // Every call of the context runs after the one before it settled: a send's savepoint never
      // interleaves with another send or with the application's statements.
      let tail: Promise<unknown> = Promise.resolve()
      const serial = <R>(work: () => R | Promise<R>): Promise<R> => {
        if (!live) return Promise.reject(ended())
        const run = tail.then(() => {
          if (!live) throw ended()
          return work()
        })
        tail = run.catch(() => {})
        return run
      }
      const tx: Transaction = {
        sql: {
          run: (sql, ...params) => serial(() => app.run(sql, ...params)),
          get: <R>(sql: string, ...params: unknown[]) => serial(() => app.get<R>(sql, ...params)),
          all: <R>(sql: string, ...params: unknown[]) => serial(() => app.all<R>(sql, ...params)),
        },
        events: {
          send: (input, scope) => serial(() => servicesOf().webhooks.events.send(input, scope)),
          sendMany: (inputs, scope) => serial(() => servicesOf().webhooks.events.sendMany(inputs, scope)),
        },
        notifications: { send: (input) => serial(() => servicesOf().notifications.send(input)) },
        requests: { send: (input, opts = {}) => serial(() => deps.requests.create(input, { ...opts, tx: s })) },
      }
      try {
        return await fn(tx)
      } finally {
        // A call left unawaited still runs to its end before the commit or the rollback (its own
        // promise reports it): no savepoint of it may outlive the transaction.
        for (let seen = null as Promise<unknown> | null; seen !== tail; ) await (seen = tail)
        live = false
        if (current === mine) current = null
      }
    })
    for (const work of after) {
      try {
        work()
      } catch (err) {
        deps.log.warn({ err }, 'after-commit work of pb.transaction failed')
      }
    }
    return result
  }
}
