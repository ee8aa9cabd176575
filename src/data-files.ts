import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { openStoreAt, type Store } from './store/index.js'
import { redactPgUrl } from './store/pg/url.js'
import type { Config } from './config.js'
import type { Log } from './log.js'

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

/** Options of `openProtectedStore`. */
export interface ProtectedStoreOptions {
  /** `migrate` (serve, migrate, library mode) or require the schema `current` (the other commands). */
  schema: 'migrate' | 'current'
  /** Where a schema creation or upgrade is logged (one line, from → to). */
  log?: Log
}

/**
 * Opens the configured database: PostgreSQL when `databaseUrl` is set, else the SQLite file with
 * its files protected (CLI commands and the facade).
 */
export async function openProtectedStore(config: Config, opts: ProtectedStoreOptions): Promise<Store> {
  const { log } = opts
  const where = config.databaseUrl !== null ? redactPgUrl(config.databaseUrl) : config.dbPath
  const onMigrate = log
    ? ({ from, to }: { from: number; to: number }) =>
        log.info(
          { db: where, schema_from: from, schema_to: to },
          from === 0 ? `database created at schema version ${to}` : `database schema upgraded from version ${from} to ${to}`,
        )
    : undefined
  if (config.databaseUrl !== null) {
    return openStoreAt(config.databaseUrl, {
      schema: opts.schema,
      preparedStatements: config.pgPreparedStatements,
      ...(onMigrate ? { onMigrate } : {}),
      ...(log ? { onError: (err: Error) => log.warn({ err }, 'PostgreSQL connection error (it is retried)') } : {}),
    })
  }
  protectDatabaseFiles(config.dbPath)
  return openStoreAt(config.dbPath, { synchronous: config.synchronous, schema: opts.schema, onMigrate })
}
