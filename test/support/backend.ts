import { inject } from 'vitest'
import type { Store } from '../../src/store/index.js'
import type { PgStore } from '../../src/store/pg/index.js'
import { freshPgDatabase, PG_URL } from './pg.js'

declare module 'vitest' {
  export interface ProvidedContext {
    /** The migrated database the `postgres` project's fixtures copy (CREATE DATABASE … TEMPLATE). */
    pgTemplate: string
  }
}

/**
 * Which backend the scenario tests run on: the `postgres` project of vitest.config.ts sets
 * POSTBOX_TEST_BACKEND=postgres (and needs POSTBOX_TEST_PG_URL); every other run is SQLite.
 */
export const TEST_BACKEND: 'sqlite' | 'postgres' = process.env.POSTBOX_TEST_BACKEND === 'postgres' ? 'postgres' : 'sqlite'
if (TEST_BACKEND === 'postgres' && !PG_URL) throw new Error('POSTBOX_TEST_BACKEND=postgres needs POSTBOX_TEST_PG_URL')

/** The database one fixture opens: on PostgreSQL a fresh database (`databaseUrl`), dropped by `drop()`; on SQLite nothing (the temp dir's file). */
export interface TestDatabase {
  /** The PostgreSQL URL to open, or undefined on SQLite. */
  databaseUrl: string | undefined
  /** Drops the fresh PostgreSQL database (a no-op on SQLite). */
  drop(): Promise<void>
}

/** A database for one fixture on the backend under test (on PostgreSQL a copy of the project's migrated template). */
export async function testDatabase(): Promise<TestDatabase> {
  if (TEST_BACKEND === 'sqlite') return { databaseUrl: undefined, drop: async () => {} }
  const template = inject('pgTemplate')
  const db = await freshPgDatabase(template ? { template } : {})
  return { databaseUrl: db.url, drop: db.drop }
}

/**
 * Runs one SQL statement on the store's own database, for tests that set up a state no API
 * reaches (e.g. an attempts count): `?` placeholders, written in the SQL both backends accept.
 * On SQLite it goes through `store.sqlite`, on PostgreSQL through the store's pool.
 */
export async function runSql(store: Store, sql: string, params: unknown[] = []): Promise<void> {
  if (store.sqlite) {
    store.sqlite.db.prepare(sql).run(...params)
    return
  }
  let n = 0
  await (store as PgStore).pool.query(sql.replace(/\?/g, () => `$${++n}`), params)
}
