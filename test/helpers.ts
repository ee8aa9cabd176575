import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openSqliteStore, type SqliteStore } from '../src/store/sqlite/index.js'
import { openStore, type Store } from '../src/store/index.js'
import { openPgStore } from '../src/store/pg/index.js'
import { testDatabase } from './support/backend.js'

/** A fresh temporary directory, removed by the returned cleanup. */
export function tempDir(prefix = 'postbox-test-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

/** A real SQLite store (the asynchronous contract) in a temp directory; `cleanup` closes it and removes the files. */
export function tempStore(): { store: Store; dir: string; cleanup: () => Promise<void> } {
  const { dir, cleanup } = tempDir()
  const store = openStore(join(dir, 'postbox.db'))
  return {
    store,
    dir,
    cleanup: async () => {
      await store.close()
      cleanup()
    },
  }
}

/**
 * A real store on the backend under test (test/support/backend.ts): SQLite in a temp directory,
 * or a fresh PostgreSQL database in the `postgres` project; `cleanup` closes it, removes the
 * directory and drops the database.
 */
export async function tempBackendStore(): Promise<{ store: Store; dir: string; cleanup: () => Promise<void> }> {
  const db = await testDatabase()
  if (db.databaseUrl === undefined) return tempStore()
  const { dir, cleanup } = tempDir()
  let store: Store
  try {
    store = await openPgStore(db.databaseUrl)
  } catch (err) {
    await db.drop()
    cleanup()
    throw err
  }
  return {
    store,
    dir,
    cleanup: async () => {
      await store.close()
      await db.drop()
      cleanup()
    },
  }
}

/** A real SQLite store, synchronous (for the SQLite families' own tests), in a temp directory. */
export function tempSqliteStore(): { store: SqliteStore; dir: string; cleanup: () => void } {
  const { dir, cleanup } = tempDir()
  const store = openSqliteStore(join(dir, 'postbox.db'))
  return {
    store,
    dir,
    cleanup: () => {
      store.close()
      cleanup()
    },
  }
}
