import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openSqliteStore, openStore, type SqliteStore, type Store } from '../src/store/index.js'

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
