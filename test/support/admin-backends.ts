/**
 * Both backends of the administrative families (keys, apps, event types, stats, clock repair, retention),
 * for contract tests that run the same cases against each: SQLite's synchronous families lifted
 * with liftSync over a real file, and the PostgreSQL families over a fresh database with the
 * schema migrated. `run` and `all` take SQL with `?` placeholders for fixtures written in the
 * SQL both dialects share.
 */
import { join } from 'node:path'
import type pg from 'pg'
import { liftSync, type Async } from '../../src/store/contract.js'
import { openDatabase } from '../../src/store/sqlite/db.js'
import { createKeysStore } from '../../src/store/sqlite/keys.js'
import { type KeysStore } from '../../src/store/keys.js'
import { createAppsStore } from '../../src/store/sqlite/apps.js'
import { type AppsStore } from '../../src/store/apps.js'
import { createEventTypesStore } from '../../src/store/sqlite/event-types.js'
import { type EventTypesStore } from '../../src/store/event-types.js'
import { createStatsStore } from '../../src/store/sqlite/stats.js'
import { type StatsStore } from '../../src/store/stats.js'
import { createClockRepairStore } from '../../src/store/sqlite/clock-repair.js'
import { type ClockRepairStore } from '../../src/store/clock-repair.js'
import { createPgPool, withPgTransaction } from '../../src/store/pg/pool.js'
import { migratePg } from '../../src/store/pg/migrations.js'
import { createPgKeysStore } from '../../src/store/pg/keys.js'
import { createPgAppsStore } from '../../src/store/pg/apps.js'
import { createPgEventTypesStore } from '../../src/store/pg/event-types.js'
import { createPgStatsStore } from '../../src/store/pg/stats.js'
import { createPgClockRepairStore } from '../../src/store/pg/clock-repair.js'
import { sweepRetentionAsync } from '../../src/store/sqlite/retention.js'
import { type RetentionOptions, type RetentionResult } from '../../src/store/retention.js'
import { sweepPgRetention } from '../../src/store/pg/retention.js'
import { tempDir } from '../helpers.js'
import { PG_URL, freshPgDatabase } from './pg.js'

/** One backend's families and fixture helpers. */
export interface AdminBackend {
  readonly name: 'sqlite' | 'postgres'
  readonly keys: Async<KeysStore>
  readonly apps: Async<AppsStore>
  readonly eventTypes: Async<EventTypesStore>
  readonly stats: Async<StatsStore>
  readonly clockRepair: Async<ClockRepairStore>
  /** One retention sweep (sweepRetentionAsync, or sweepPgRetention). */
  sweep(opts: RetentionOptions): Promise<RetentionResult>
  /** Runs a fixture statement (`?` placeholders). */
  run(sql: string, ...args: unknown[]): Promise<void>
  /** Reads rows (`?` placeholders). */
  all<T = Record<string, unknown>>(sql: string, ...args: unknown[]): Promise<T[]>
  /** A second family set on the same database, as another connection (SQLite) or another node (PostgreSQL) has. */
  other(): { eventTypes: Async<EventTypesStore>; apps: Async<AppsStore> }
  close(): Promise<void>
}

/** The backends to run contract cases against: SQLite always, PostgreSQL when the tests have a server. */
export const ADMIN_BACKENDS: readonly ('sqlite' | 'postgres')[] = PG_URL ? ['sqlite', 'postgres'] : ['sqlite']

const dollarParams = (sql: string): string => {
  let n = 0
  return sql.replace(/\?/g, () => `$${++n}`)
}

/** Opens one backend on a new, empty database at the current schema. */
export async function openAdminBackend(name: 'sqlite' | 'postgres'): Promise<AdminBackend> {
  if (name === 'sqlite') {
    const { dir, cleanup } = tempDir()
    const file = join(dir, 'postbox.db')
    const db = openDatabase(file)
    const others: ReturnType<typeof openDatabase>[] = []
    return {
      name,
      keys: liftSync(createKeysStore(db)),
      apps: liftSync(createAppsStore(db)),
      eventTypes: liftSync(createEventTypesStore(db)),
      stats: liftSync(createStatsStore(db)),
      clockRepair: liftSync(createClockRepairStore(db)),
      sweep: (opts) => sweepRetentionAsync({ db }, opts),
      run: async (sql, ...args) => void db.prepare(sql).run(...args),
      all: async <T>(sql: string, ...args: unknown[]) => db.prepare(sql).all(...args) as T[],
      other() {
        const o = openDatabase(file)
        others.push(o)
        return { eventTypes: liftSync(createEventTypesStore(o)), apps: liftSync(createAppsStore(o)) }
      },
      async close() {
        for (const o of others) o.close()
        db.close()
        cleanup()
      },
    }
  }
  const fresh = await freshPgDatabase()
  const pools: pg.Pool[] = []
  const pool = createPgPool(fresh.url, { max: 4 })
  pools.push(pool)
  await migratePg(pool)
  return {
    name,
    keys: createPgKeysStore(pool),
    apps: createPgAppsStore(pool),
    eventTypes: createPgEventTypesStore(pool),
    stats: createPgStatsStore(pool),
    clockRepair: createPgClockRepairStore(pool, (fn) => withPgTransaction(pool, fn)),
    sweep: (opts) => sweepPgRetention({ transact: (fn) => withPgTransaction(pool, fn) }, opts),
    run: async (sql, ...args) => void (await pool.query(dollarParams(sql), args)),
    all: async <T>(sql: string, ...args: unknown[]) => (await pool.query(dollarParams(sql), args)).rows as T[],
    other() {
      const p = createPgPool(fresh.url, { max: 2 })
      pools.push(p)
      return { eventTypes: createPgEventTypesStore(p), apps: createPgAppsStore(p) }
    },
    async close() {
      for (const p of pools) await p.end()
      await fresh.drop()
    },
  }
}

/** An endpoint row with the columns a case names (the rest defaulted). */
export async function addEndpoint(
  b: AdminBackend,
  e: { id: string; appId?: string; url?: string; disabled?: boolean; deletedAt?: number | null; pausedUntil?: number | null; pauseCount?: number; retrySchedule?: string | null; ordered?: boolean },
): Promise<void> {
  await b.run(
    `INSERT INTO endpoints (id, app_id, url, secret, disabled, deleted_at, paused_until, pause_count, retry_schedule, ordered, created_at, updated_at)
     VALUES (?, ?, ?, 'whsec_test', ?, ?, ?, ?, ?, ?, 0, 0)`,
    e.id,
    e.appId ?? 'default',
    e.url ?? `https://example.com/${e.id}`,
    e.disabled ? 1 : 0,
    e.deletedAt ?? null,
    e.pausedUntil ?? null,
    e.pauseCount ?? 0,
    e.retrySchedule ?? null,
    e.ordered ? 1 : 0,
  )
}

/** A delivery row written directly (no event: webhook rows may name only their endpoint). */
export async function addDelivery(
  b: AdminBackend,
  d: {
    id: string
    channel?: string
    endpointId?: string | null
    targetKey?: string | null
    appId?: string
    status?: string
    nextAttemptAt: number
    createdAt?: number
    updatedAt?: number
    orderingKey?: string | null
    recipient?: string
  },
): Promise<void> {
  await b.run(
    `INSERT INTO deliveries (id, channel, endpoint_id, target_key, notification_id, recipient, event_type, ordering_key, status, max_attempts, next_attempt_at, app_id, created_at, updated_at)
     VALUES (?, ?, ?, ?, 'ntf_test', ?, 'test.event', ?, ?, 8, ?, ?, ?, ?)`,
    d.id,
    d.channel ?? 'webhook',
    d.endpointId === undefined ? null : d.endpointId,
    d.targetKey ?? null,
    d.recipient ?? d.id,
    d.orderingKey ?? null,
    d.status ?? 'pending',
    d.nextAttemptAt,
    d.appId ?? 'default',
    d.createdAt ?? 0,
    d.updatedAt ?? d.createdAt ?? 0,
  )
}
