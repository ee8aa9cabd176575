/**
 * Test support for the core families' contract tests (src/store/pg/*.test.ts): the same
 * `Async<…>` families over a real SQLite file (the synchronous families lifted with liftSync) and
 * over a real PostgreSQL database (CORE_DDL on freshPgDatabase()), so one test body runs on both.
 */
import { join } from 'node:path'
import pg from 'pg'
import { createPgPool } from '../../src/store/pg/pool.js'
import { liftSync, type Async } from '../../src/store/contract.js'
import { openDatabase } from '../../src/store/sqlite/db.js'
import { createDeliveriesStore } from '../../src/store/sqlite/deliveries.js'
import type { DeliveriesStore } from '../../src/store/deliveries.js'
import { createEndpointsStore } from '../../src/store/sqlite/endpoints.js'
import { type EndpointSettings, type EndpointsStore } from '../../src/store/endpoints.js'
import { createEventsStore } from '../../src/store/sqlite/events.js'
import { type EventsStore } from '../../src/store/events.js'
import { createRequestsStore } from '../../src/store/sqlite/requests.js'
import { type RequestsStore } from '../../src/store/requests.js'
import { createPgDeliveriesStore } from '../../src/store/pg/deliveries.js'
import { createPgEndpointsStore } from '../../src/store/pg/endpoints.js'
import { createPgEventsStore } from '../../src/store/pg/events.js'
import { createPgRequestsStore } from '../../src/store/pg/requests.js'
import { CORE_DDL } from '../../src/store/pg/schema-core.js'
import { freshPgDatabase, PG_URL } from './pg.js'
import { tempDir } from '../helpers.js'

/** The backends the contract tests run on: SQLite always, PostgreSQL when the test server is set. */
export const BACKENDS: readonly ('sqlite' | 'postgres')[] = PG_URL ? ['sqlite', 'postgres'] : ['sqlite']

/** The four core families over one database, with `due` counting the deliveries' markDue calls. */
export interface CoreFamilies {
  backend: 'sqlite' | 'postgres'
  events: Async<EventsStore>
  endpoints: Async<EndpointsStore>
  deliveries: Async<DeliveriesStore>
  requests: Async<RequestsStore>
  due: { count: number }
  /** Runs a fixture statement with `?` placeholders on either backend. */
  exec(sql: string, params?: readonly unknown[]): Promise<void>
  /** Reads rows of a fixture query with `?` placeholders on either backend. */
  all<R>(sql: string, params?: readonly unknown[]): Promise<R[]>
}

/** A test pool: createPgPool's (int8 and numeric as numbers, idle connection errors ignored). */
export const testPool = (url: string, max = 4): pg.Pool => createPgPool(url, { max })

const toPg = (sql: string): string => {
  let n = 0
  return sql.replace(/\?/g, () => `$${++n}`)
}

/** The PG families over `q` (the pool, or a transaction's client). */
export function pgFamilies(q: pg.Pool | pg.PoolClient, due: { count: number }): Omit<CoreFamilies, 'exec' | 'all' | 'backend'> {
  const deliveries = createPgDeliveriesStore(q, () => due.count++)
  return {
    events: createPgEventsStore(q),
    endpoints: createPgEndpointsStore(q),
    deliveries,
    requests: createPgRequestsStore(q, deliveries),
    due,
  }
}

/** Opens and resets the families of one backend: `setup` once per file, `fresh` before each test, `teardown` at the end. */
export function coreBackend(kind: 'sqlite' | 'postgres') {
  let pgDb: { url: string; drop: () => Promise<void> } | null = null
  let pool: pg.Pool | null = null
  let closeSqlite = (): void => {}
  return {
    /** Creates the PostgreSQL database (nothing for SQLite). */
    async setup(): Promise<void> {
      if (kind !== 'postgres') return
      pgDb = await freshPgDatabase()
      pool = testPool(pgDb.url)
      await pool.query(CORE_DDL)
    },
    /** Empty tables and new families. */
    async fresh(): Promise<CoreFamilies> {
      const due = { count: 0 }
      if (kind === 'postgres') {
        const p = pool!
        await p.query(`TRUNCATE events, endpoints, deliveries, attempts, requests, endpoint_tokens CASCADE;
          UPDATE endpoint_versions SET version = 0, settings_version = 0`)
        return {
          backend: kind,
          ...pgFamilies(p, due),
          exec: async (sql, params = []) => void (await p.query(toPg(sql), [...params])),
          all: async <R>(sql: string, params: readonly unknown[] = []) => (await p.query(toPg(sql), [...params])).rows as R[],
        }
      }
      closeSqlite()
      const t = tempDir('postbox-core-')
      const db = openDatabase(join(t.dir, 'postbox.db'))
      closeSqlite = () => {
        if (db.open) db.close()
        t.cleanup()
        closeSqlite = () => {}
      }
      const deliveries = createDeliveriesStore(db, () => due.count++)
      return {
        backend: kind,
        events: liftSync(createEventsStore(db)),
        endpoints: liftSync(createEndpointsStore(db)),
        deliveries: liftSync(deliveries),
        requests: liftSync(createRequestsStore(db, deliveries)),
        due,
        exec: async (sql, params = []) => void db.prepare(sql).run(...params),
        all: async <R>(sql: string, params: readonly unknown[] = []) => db.prepare(sql).all(...params) as R[],
      }
    },
    /** Closes and removes everything. */
    async teardown(): Promise<void> {
      closeSqlite()
      await pool?.end()
      await pgDb?.drop()
    },
    /** The PostgreSQL database's URL (two-node tests open their own pools on it). */
    url: (): string => pgDb!.url,
  }
}

/** Endpoint settings for tests: every default, any field overridden. */
export function endpointSettings(extra: Partial<EndpointSettings> = {}): EndpointSettings {
  return {
    url: 'https://example.com/hook',
    description: '',
    eventTypes: null,
    headers: {},
    method: 'POST',
    timeoutMs: 15_000,
    maxConcurrency: 16,
    rateLimit: null,
    ordered: false,
    retrySchedule: null,
    signature: 'standard',
    metadata: {},
    ...extra,
  }
}

/** Inserts an endpoint through the family (enabled, secret `whsec_test`). */
export async function addEndpoint(f: CoreFamilies, id: string, extra: Partial<EndpointSettings> & { disabled?: boolean; appId?: string } = {}, now = 0): Promise<void> {
  const { disabled = false, appId, ...s } = extra
  await f.endpoints.insert({ ...endpointSettings(s), id, secret: 'whsec_test', disabled, disabledReason: disabled ? 'manual' : null, ...(appId ? { appId } : {}) }, now)
}
