import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { openStore, type Store } from './store/index.js'
import type { Config } from './config.js'

/**
 * The database holds signing secrets in clear, so it is created 0600 (SQLite gives its -wal
 * and -shm files the database's mode) and an existing one is narrowed to 0600.
 */
export function protectDatabaseFiles(dbPath: string): void {
  if (dbPath === ':memory:' || dbPath === '') return
  const dir = dirname(dbPath)
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 })
  if (!existsSync(dbPath)) {
    try {
      writeFileSync(dbPath, '', { mode: 0o600, flag: 'wx' })
    } catch {
      // created concurrently: fall through to the chmod
    }
  }
  for (const f of [dbPath, `${dbPath}-wal`, `${dbPath}-shm`]) {
    try {
      chmodSync(f, 0o600)
    } catch {
      // missing, or owned by someone else: SQLite reports real access problems itself
    }
  }
}

/** Opens the configured database with its files protected (CLI commands and the facade). */
export function openProtectedStore(config: Config): Store {
  protectDatabaseFiles(config.dbPath)
  return openStore(config.dbPath, { synchronous: config.synchronous })
}
