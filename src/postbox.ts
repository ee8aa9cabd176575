import { dirname, join } from 'node:path'
import type { OpenAPIHono } from '@hono/zod-openapi'
import { ensureAdminKey, type AdminKeyBootstrap } from './admin-key.js'
import { createApp } from './api/app.js'
import { openProtectedStore } from './data-files.js'
import type { ApiEnv } from './api/deps.js'
import { checkConfig, ConfigError, configFromOptions, loadConfig, type Config } from './config.js'
import { systemClock, type Clock, type Rng } from './lib/clock.js'
import { silentLogger, type Log } from './log.js'
import { createMetrics, type Metrics } from './metrics.js'
import type { Store } from './store/index.js'
import { createRetentionRunner, storeRetention, type RetentionRunner } from './store/sqlite/retention.js'
import type { Checkpointer } from './store/sqlite/checkpointer.js'
import { startCheckpointerOnDemand } from './store/sqlite/checkpointer-on-demand.js'
import { createWebhookService } from './webhooks/service.js'
import type { WebhookService } from './webhooks/types.js'
import { createEngine, type Engine } from './engine.js'
import { repairFutureTimes } from './delivery/clock-repair.js'
import type { NotifyService, UserInbox } from './notify/service.js'
import { loadTokenKey } from './notify/tokens.js'
import { unconfiguredChannelWarnings } from './notify/channel-warnings.js'
import { portalKey } from './auth/portal-tokens.js'
import { createAppService, type AppService } from './apps/service.js'
import type { Catalog } from './apps/catalog.js'
import type { AttemptHook } from './delivery/channel.js'
import { createRequestService, type RequestService } from './webhooks/requests.js'
import { createTransactionRunner, type Transaction } from './transaction.js'
import { consumeInProcess, type ConsumeHandler, type ConsumeOptions, type Consumer } from './consume.js'

/** Options of `Postbox.open`: any Config field in camelCase, or a whole `config`. */
export interface PostboxOptions extends Partial<Omit<Config, 'dbPath' | 'allowNetworks'>> {
  /** The SQLite file; default `<dataDir>/postbox.db`. */
  db?: string
  /** CIDRs webhooks may reach despite being non-public (e.g. `127.0.0.0/8` for a local receiver). */
  allowNetworks?: readonly string[]
  /** A complete configuration (from `loadConfig`); the camelCase fields above override it. */
  config?: Config
  clock?: Clock
  rng?: Rng
  log?: Log
  /** Apply the first-start admin key rules of docs/api.md (default true). */
  bootstrapAdminKey?: boolean
  /**
   * Called after every attempt of every channel (webhook, request, inbox, email…), once its
   * outcome is committed, outside any transaction; an error it throws is logged and ignored
   * (docs/requests.md).
   */
  onAttempt?: AttemptHook
  /** Add Node.js process metrics (CPU, memory, GC, event loop) to /metrics; the server turns it on. */
  processMetrics?: boolean
}

/** How often the retention sweep runs after the one at start (docs/delivery.md). */
export const RETENTION_INTERVAL_MS = 3_600_000

/** Builds the Config of library mode: defaults (or `opts.config`) with the given fields over them. */
export function resolveConfig(opts: PostboxOptions): Config {
  const base = opts.config ?? loadConfig({})
  const { db, config: _c, clock: _k, rng: _r, log: _l, bootstrapAdminKey: _b, processMetrics: _p, onAttempt: _a, ...fields } = opts
  if (db !== undefined && (typeof db !== 'string' || db === '')) throw new ConfigError('POSTBOX_DB', 'expected a path (option db)')
  const defined = configFromOptions(fields, Object.keys(base).filter((k) => k !== 'dbPath'))
  const dataDir = defined.dataDir ?? (db !== undefined && opts.config === undefined ? dirname(db) : base.dataDir)
  const dbPath = db ?? (defined.dataDir !== undefined ? join(dataDir, 'postbox.db') : base.dbPath)
  return Object.freeze(checkConfig({ ...base, ...defined, dataDir, dbPath }))
}

/**
 * The library facade of docs/api.md: one store, the services, the dispatcher and the HTTP app,
 * in-process. The server and the CLI use exactly this object.
 */
export class Postbox {
  /** The Hono app; mount it in another server or call `app.request()`. */
  readonly app: OpenAPIHono<ApiEnv>
  /** What the first-start admin key rules did. */
  readonly adminKey: AdminKeyBootstrap
  private started = false
  private closed = false
  private retentionTimer: NodeJS.Timeout | null = null
  private checkpointer: Checkpointer | null = null
  private sweeping: Promise<unknown> | null = null
  /** Remembers where the previous sweep stopped, so the hourly sweep does not re-read what it keeps. */
  private readonly retention: Pick<RetentionRunner, 'sweepAsync'> | null

  private constructor(
    readonly config: Config,
    readonly store: Store,
    readonly log: Log,
    readonly clock: Clock,
    readonly webhooks: WebhookService,
    readonly metrics: Metrics,
    private readonly engine: Engine,
    adminKey: AdminKeyBootstrap,
    /** Applications (tenants) and their portal tokens: create, list, get, update, remove, portalToken. */
    readonly apps: AppService,
    /** Durable HTTP requests (docs/requests.md): create, list, get, redeliver, cancel. */
    readonly requests: RequestService,
    retention: Pick<RetentionRunner, 'sweepAsync'>,
  ) {
    this.adminKey = adminKey
    this.app = createApp({ store, config, log, clock, webhooks, metrics, notify: engine.notify, apps, requests })
    this.retention = retention
  }

  /** Opens (creating and migrating) the database and wires every service; call `start()` to deliver. */
  static async open(opts: PostboxOptions = {}): Promise<Postbox> {
    const config = resolveConfig(opts)
    const log = opts.log ?? silentLogger()
    const clock = opts.clock ?? systemClock
    const rng = opts.rng ?? Math.random
    const store = await openProtectedStore(config, { schema: 'migrate', log })
    try {
      const adminKey = opts.bootstrapAdminKey === false ? ({ action: 'none' } as const) : await ensureAdminKey(store, config, log, clock.now())
      const webhooks = createWebhookService({ store, config, clock, rng, log })
      const metrics = createMetrics(store, clock, { defaultMetrics: opts.processMetrics ?? false })
      const engine = createEngine({ store, config, clock, rng, log, webhooks, observer: metrics, ...(opts.onAttempt ? { onAttempt: opts.onAttempt } : {}) })
      const apps = createAppService({ store, config, clock, portalKey: portalKey(loadTokenKey(config.tokenSecret, config.dataDir)) })
      const requests = createRequestService({ store, config, clock })
      // The SQLite sweep's batches go through the Store's transactions (storeRetention); the
      // PostgreSQL one is imported only for a PostgreSQL store, which has loaded `pg` already.
      const retention = store.sqlite ? createRetentionRunner(storeRetention(store)) : (await import('./store/pg/index.js')).pgRetention(store)
      return new Postbox(config, store, log, clock, webhooks, metrics, engine, adminKey, apps, requests, retention)
    } catch (err) {
      await store.close()
      throw err
    }
  }

  private transactions: ReturnType<typeof createTransactionRunner> | null = null

  /**
   * Runs `fn` in one transaction with the application's own SQL and Postbox's sends (SQLite
   * only; docs/outbox.md): all commit together or, when `fn` throws, none; nothing is sent before the commit.
   */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    this.transactions ??= createTransactionRunner({
      store: this.store, config: this.config, clock: this.clock, log: this.log, requests: this.requests, hub: this.engine.notify.stream, observer: this.metrics,
    })
    return this.transactions(fn)
  }

  /** Endpoints: create, list, get, update, remove, secrets, enable, recover, test. */
  /** Consumes pull endpoint `endpointId` in-process: a handler that resolves acks, one that throws nacks (docs/pull-endpoints.md). */
  consume(endpointId: string, handler: ConsumeHandler, opts?: ConsumeOptions): Consumer {
    return consumeInProcess(this.webhooks.pull, endpointId, handler, opts)
  }

  get endpoints(): WebhookService['endpoints'] {
    return this.webhooks.endpoints
  }

  /** Events: send, sendMany, get. */
  get events(): WebhookService['events'] {
    return this.webhooks.events
  }

  /** The event-type catalog: put, get, list (and the ingest check). */
  get eventTypes(): Catalog {
    return this.webhooks.eventTypes
  }

  /** Deliveries: list, get, redeliver. */
  get deliveries(): WebhookService['deliveries'] {
    return this.webhooks.deliveries
  }

  /** Notifications (docs/notifications-basics.md): send, get. */
  get notifications(): NotifyService['notifications'] {
    return this.engine.notify.notifications
  }

  /** One user's in-app inbox (list, counts, state changes, snooze, bulk changes), optionally limited to one application. */
  inbox(userId: string, appId: string | null = null): UserInbox {
    return this.engine.notify.inbox(userId, appId)
  }

  /** The directory: users (put, get, delete, list). */
  get users(): NotifyService['users'] {
    return this.engine.notify.users
  }

  /** Topic subscriptions (put, delete, list). */
  get subscriptions(): NotifyService['subscriptions'] {
    return this.engine.notify.subscriptions
  }

  /** Notification preferences (put, list). */
  get preferences(): NotifyService['preferences'] {
    return this.engine.notify.preferences
  }

  /** Versioned templates (put, list). */
  get templates(): NotifyService['templates'] {
    return this.engine.notify.templates
  }

  /** End-user inbox tokens (issue, verify). */
  get tokens(): NotifyService['tokens'] {
    return this.engine.notify.tokens
  }

  /** The full notify service (directory, inbox streams, channels). */
  get notify(): NotifyService {
    return this.engine.notify
  }

  /** Starts the dispatcher, background WAL checkpoints and the retention sweep (now, then hourly). Idempotent. */
  start(): this {
    if (this.started || this.closed) return this
    this.started = true
    // The WAL checkpointer is SQLite's; PostgreSQL checkpoints itself.
    if (this.store.sqlite) this.checkpointer = startCheckpointerOnDemand(this.store.sqlite, this.log)
    this.engine.dispatcher.start()
    // Said once, at start: a channel the templates or default preferences use but nothing configures.
    unconfiguredChannelWarnings(this.store, this.config).then(
      (warnings) => warnings.forEach((w) => this.log.warn({ channel: 'email' }, w)),
      (err: unknown) => this.log.debug?.({ err }, 'channel configuration check failed'),
    )
    this.sweep(false)
    this.retentionTimer = setInterval(() => this.sweep(true), RETENTION_INTERVAL_MS)
    this.retentionTimer.unref()
    return this
  }

  /**
   * Runs the hourly maintenance now (clock repair, then a retention sweep) and resolves when it is
   * done; for embedded hosts that suspend or schedule work themselves. A sweep already running
   * finishes first.
   */
  async maintain(): Promise<void> {
    await this.sweeping
    this.sweep(true)
    await this.sweeping
  }

  /**
   * Runs one retention sweep unless one is already running; the hourly ones first repair times a
   * clock that ran ahead left in the file. Not the one at start: a machine that boots with its
   * clock behind (no RTC, NTP not synced yet) would see every held row as written ahead.
   */
  private sweep(repairClock: boolean): void {
    if (this.sweeping || this.closed) return
    const c = this.config
    const run = async (): Promise<void> => {
      if (repairClock) {
        try {
          await repairFutureTimes(this.store, c, this.clock.now(), this.log)
        } catch (err) {
          this.log.warn({ err }, 'clock repair failed')
        }
      }
      if (!this.retention) return
      const r = await this.retention.sweepAsync({
        now: this.clock.now(),
        successMs: c.retentionSuccessMs,
        deadMs: c.retentionDeadMs,
        inboxMs: c.retentionInboxMs,
        eventsMs: c.retentionEventsMs,
        onStreamEvents: (userId, events) => this.engine.notify.stream.publish(userId, events),
      })
      this.log.info({ retention: r }, 'retention sweep done')
    }
    this.sweeping = run()
      .catch((err: unknown) => this.log.warn({ err }, 'retention sweep failed'))
      .finally(() => {
        this.sweeping = null
      })
  }

  /** Ends every live inbox stream cleanly (clients reconnect with Last-Event-ID); `close()` does it first. */
  endStreams(): void {
    this.engine.notify.stream.endAll()
  }

  /**
   * Graceful stop: the dispatcher stops claiming and drains in-flight requests within
   * `config.shutdownTimeoutMs`, unsent claims are released, the sender's connections close,
   * and the database is checkpointed and closed.
   */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.endStreams()
    if (this.retentionTimer) clearInterval(this.retentionTimer)
    try {
      await this.engine.stop(this.config.shutdownTimeoutMs)
    } catch (err) {
      this.log.warn({ err }, 'dispatcher did not stop cleanly')
    }
    await this.sweeping
    await this.checkpointer?.stop()
    await this.store.close()
  }
}
