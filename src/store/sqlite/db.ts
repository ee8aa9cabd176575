import Database from 'better-sqlite3'
import { mkdirSync, readFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { findPackageFile } from '../../lib/package-file.js'
import { freshSchemaSql } from './fresh-schema.js'
import { MIGRATIONS } from './migrations.js'
import { SCHEMA_VERSION, SchemaOutdatedError, SchemaTooNewError, type OpenOptions } from '../schema.js'

/** A better-sqlite3 connection; only code under src/store/ touches it. */
export type Db = Database.Database

/**
 * Prepares each statement of a map of named SQL texts once per connection, on its first use.
 * Why on first use: an idle server's open would otherwise prepare every statement it does not
 * run yet (docs/performance.md, start); a text SQLite rejects then throws where it is first run.
 */
export function prepareAll<T extends Record<string, string>>(db: Db, sql: T): { [K in keyof T]: Database.Statement } {
  const out = {} as { [K in keyof T]: Database.Statement }
  for (const [k, v] of Object.entries(sql)) {
    Object.defineProperty(out, k, {
      enumerable: true,
      configurable: true,
      get(): Database.Statement {
        const st = db.prepare(v)
        Object.defineProperty(out, k, { value: st, enumerable: true, writable: false })
        return st
      },
    })
  }
  return out
}

/** Prepares each distinct SQL text once per connection: for statements built from optional filters. */
export function statementCache(db: Db): (sql: string) => Database.Statement {
  const cache = new Map<string, Database.Statement>()
  return (sql) => {
    let st = cache.get(sql)
    if (!st) cache.set(sql, (st = db.prepare(sql)))
    return st
  }
}

/** The most rows one multi-row statement takes (`multiRow`). */
export const MULTI_ROW_MAX = 64

/** `n` copies of a row's SQL tuple, comma-separated: the VALUES list of an n-row statement. */
export const tuples = (n: number, tuple: string): string => new Array<string>(n).fill(tuple).join(', ')

/** Sizes of the statements `multiRow` runs for `count` rows: MULTI_ROW_MAX each, then powers of two down. */
export function chunkSizes(count: number): number[] {
  const out: number[] = []
  let left = count
  for (; left >= MULTI_ROW_MAX; left -= MULTI_ROW_MAX) out.push(MULTI_ROW_MAX)
  for (let size = MULTI_ROW_MAX / 2; left > 0; size /= 2) {
    if (left >= size) {
      out.push(size)
      left -= size
    }
  }
  return out
}

/** Runs `each` per chunk of `rows` with its statement, its flat parameters, where it starts and its size. */
export type ChunkRunner<R, C> = <T>(rows: readonly R[], ctx: C, each: (st: Database.Statement, args: unknown[], from: number, n: number) => T) => T[]

/**
 * Runs a batch of rows as multi-row statements: `build(n)` is the SQL for n rows, prepared once
 * per size and connection on first use (then passed through `setup`, e.g. to make it raw), and
 * `args` gives the flat parameters of rows [from, from + n), with the batch's `ctx` (a time, say)
 * the runner was given. The runner calls `each` once per
 * chunk of `chunkSizes(rows.length)`, in order. Why: every statement step costs binding, stepping
 * and resetting on top of its row work, which a statement of 64 rows pays once (bench/queue-floor.ts);
 * powers of two keep at most seven sizes of each text prepared.
 */
export function multiRow<R, C = undefined>(
  db: Db,
  build: (n: number) => string,
  args: (rows: readonly R[], from: number, n: number, ctx: C) => unknown[],
  setup: (st: Database.Statement) => Database.Statement = (st) => st,
): ChunkRunner<R, C> {
  const bySize = new Map<number, Database.Statement>()
  const statement = (n: number): Database.Statement => {
    let st = bySize.get(n)
    if (!st) bySize.set(n, (st = setup(db.prepare(build(n)))))
    return st
  }
  return (rows, ctx, each) => {
    const out = []
    let from = 0
    for (const n of chunkSizes(rows.length)) {
      out.push(each(statement(n), args(rows, from, n, ctx), from, n))
      from += n
    }
    return out
  }
}

let schemaText: string | null = null

/** Reads schema.sql from the package root (works from src/ and from dist/src/). */
export function readSchemaSql(): string {
  if (schemaText !== null) return schemaText
  const file = findPackageFile('schema.sql')
  if (file === null) throw new Error('schema.sql not found next to the Postbox package')
  schemaText = readFileSync(file, 'utf8')
  return schemaText
}

/** WAL pages between the automatic checkpoints a committing connection runs itself. */
export const WAL_AUTOCHECKPOINT_PAGES = 1000

/**
 * Opens (creating if needed) a Postbox database, sets the pragmas and brings the schema to
 * SCHEMA_VERSION (unless `opts.schema` says otherwise). busy_timeout is set before anything
 * that may wait on a lock, WAL before the first write.
 */
export function openDatabase(path: string, opts: OpenOptions = {}): Db {
  if (path !== ':memory:' && !opts.readonly) mkdirSync(dirname(path), { recursive: true })
  const db = new Database(path, { readonly: opts.readonly ?? false })
  try {
    db.pragma('busy_timeout = 5000')
    if (!opts.readonly) db.pragma('journal_mode = WAL')
    db.pragma(`synchronous = ${opts.synchronous === 'full' ? 'FULL' : 'NORMAL'}`)
    db.pragma('foreign_keys = ON')
    db.pragma('temp_store = MEMORY')
    // ~4 MB of WAL between automatic checkpoints; the file is truncated back to 64 MB at most.
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`)
    db.pragma('journal_size_limit = 67108864')
    db.pragma('cache_size = -32000')
    const schema = opts.schema ?? 'migrate'
    if (schema === 'current') assertVersionCurrent(db)
    if (schema === 'any') {
      // as found: nothing reads the tables
    } else if (opts.readonly) assertVersionSupported(db)
    else {
      const change = migrate(db)
      if (change.to !== change.from) opts.onMigrate?.(change)
    }
    return db
  } catch (err) {
    db.close()
    throw err
  }
}

/** Returns the database's PRAGMA user_version. */
export function schemaVersion(db: Db): number {
  return db.pragma('user_version', { simple: true }) as number
}

function assertVersionSupported(db: Db): void {
  const v = schemaVersion(db)
  if (v > SCHEMA_VERSION) throw new SchemaTooNewError(v, SCHEMA_VERSION)
}

function hasNoTables(db: Db): boolean {
  return (db.prepare(`SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'`).get() as { n: number }).n === 0
}

function assertVersionCurrent(db: Db): void {
  const v = schemaVersion(db)
  assertVersionSupported(db)
  if (v < SCHEMA_VERSION && !(v === 0 && hasNoTables(db))) throw new SchemaOutdatedError(v, SCHEMA_VERSION)
}

/**
 * Brings the schema up to date: a new file gets schema.sql (as the build consolidated it when that
 * matches: fresh-schema.ts), an older one gets each forward step after its user_version, each
 * step in its own transaction. A newer file is refused. `schemaSql` gives the text for a new
 * file (tests pass another one).
 */
export function migrate(db: Db, schemaSql: () => string = () => freshSchemaSql(readSchemaSql())): { from: number; to: number } {
  const from = schemaVersion(db)
  assertVersionSupported(db)
  if (from === SCHEMA_VERSION) return { from, to: from }
  if (from === 0 && hasNoTables(db)) {
    db.transaction(() => {
      db.exec(schemaSql())
      // schema.sql is read from disk and the steps are compiled in: an install that mixes two
      // versions (a stale dist/, a copied schema.sql) must not create a file no command opens.
      const written = schemaVersion(db)
      if (written !== SCHEMA_VERSION) throw new Error(`schema.sql creates schema version ${written} but this Postbox is built for ${SCHEMA_VERSION}: the installation mixes two versions (rebuild it)`)
    })()
    return { from, to: SCHEMA_VERSION }
  }
  // A step may rebuild a table (v3 → v4 drops and recreates deliveries); with foreign keys on,
  // that drop would cascade into attempts. The pragma cannot change inside a transaction, so it
  // is off around the steps, and each step must not add a broken key (rows orphaned by hand
  // before the upgrade are not its business). Each step takes the write lock first and skips
  // itself if another process got there: a second run of a step is not always harmless.
  const foreignKeys = db.pragma('foreign_keys', { simple: true }) === 1
  const brokenKeys = (): number => (db.pragma('foreign_key_check') as unknown[]).length
  db.pragma('foreign_keys = OFF')
  try {
    for (let v = from; v < SCHEMA_VERSION; v++) {
      db.transaction(() => {
        if (schemaVersion(db) > v) return
        const before = brokenKeys()
        db.exec(MIGRATIONS[v]!)
        const after = brokenKeys()
        if (after > before) throw new Error(`schema step to version ${v + 1} would break ${after - before} foreign keys`)
        db.pragma(`user_version = ${v + 1}`)
      }).immediate()
    }
  } finally {
    if (foreignKeys) db.pragma('foreign_keys = ON')
  }
  return { from, to: SCHEMA_VERSION }
}
