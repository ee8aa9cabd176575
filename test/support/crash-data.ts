import Database from 'better-sqlite3'
import { join } from 'node:path'
import { expect } from 'vitest'
import { createPgPool } from '../../src/store/pg/pool.js'
import { tempDir } from '../helpers.js'
import { TEST_BACKEND, testDatabase } from './backend.js'
import { serverEnv } from './server-process.js'

/**
 * The database of one crash scenario (test/crash-recovery.test.ts) on the backend under test: a
 * data directory, and on PostgreSQL a fresh database the servers share through
 * POSTBOX_DATABASE_URL. The checks read it directly, in SQL both backends accept.
 */
export interface CrashData {
  /** The data directory (the SQLite file's, or the PostgreSQL servers' other files). */
  readonly dir: string
  /** The server environment for this database (serverEnv plus POSTBOX_DATABASE_URL on PostgreSQL). */
  env(adminKey: string, extra?: Record<string, string>): Record<string, string>
  /** The first column of the first row of `sql`, as a number (counts). */
  count(sql: string): Promise<number>
  /** Every row of `sql`. */
  rows<T>(sql: string): Promise<T[]>
  /** Asserts the database is consistent: SQLite's integrity and foreign key checks (PostgreSQL enforces both itself). */
  check(): Promise<void>
  /** Closes the connections and removes the directory and the database. */
  cleanup(): Promise<void>
}

/** A fresh crash database on the backend under test. */
export async function crashData(prefix: string): Promise<CrashData> {
  const tmp = tempDir(prefix)
  const db = await testDatabase()
  if (db.databaseUrl === undefined) {
    const path = join(tmp.dir, 'postbox.db')
    // One read-only connection at a time, opened per read: the file may not exist yet, and a
    // connection kept open across a server's start would hold its WAL.
    const read = <T>(fn: (c: Database.Database) => T): T => {
      const c = new Database(path, { readonly: true })
      try {
        return fn(c)
      } finally {
        c.close()
      }
    }
    return {
      dir: tmp.dir,
      env: (adminKey, extra = {}) => serverEnv(tmp.dir, adminKey, extra),
      count: async (sql) => Number(read((c) => c.prepare(sql).pluck().get())),
      rows: async <T>(sql: string) => read((c) => c.prepare(sql).all() as T[]),
      async check() {
        const c = new Database(path)
        try {
          expect(c.pragma('integrity_check', { simple: true })).toBe('ok')
          expect(c.pragma('foreign_key_check')).toEqual([])
        } finally {
          c.close()
        }
      },
      cleanup: async () => tmp.cleanup(),
    }
  }
  const url = db.databaseUrl
  const pool = createPgPool(url, { max: 2 })
  return {
    dir: tmp.dir,
    env: (adminKey, extra = {}) => serverEnv(tmp.dir, adminKey, { POSTBOX_DATABASE_URL: url, ...extra }),
    count: async (sql) => Number(Object.values((await pool.query(sql)).rows[0] as Record<string, unknown>)[0]),
    rows: async <T>(sql: string) => (await pool.query(sql)).rows as T[],
    check: async () => {},
    async cleanup() {
      await pool.end()
      await db.drop()
      tmp.cleanup()
    },
  }
}

/** True when the crash scenarios run on SQLite (the retention and backup kills are SQLite's alone). */
export const CRASH_ON_SQLITE = TEST_BACKEND === 'sqlite'
