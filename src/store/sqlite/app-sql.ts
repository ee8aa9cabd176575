/**
 * The application's own SQL inside `pb.transaction` (docs/outbox.md): statements on the
 * application's tables in Postbox's SQLite file, on Postbox's connection, checked first so that
 * none writes Postbox's own tables or ends the transaction it runs in.
 */
import type Database from 'better-sqlite3'
import { AppError } from '../../errors.js'
import { readSchemaSql, type Db } from './db.js'
import { MIGRATIONS } from './migrations.js'

/** What `run` reports: rows changed and the last inserted rowid, as better-sqlite3 gives them. */
export interface AppRunResult {
  changes: number
  lastInsertRowid: number | bigint
}

/** Statements on the application's own tables: one statement per call, with `?` or named parameters. */
export interface AppSql {
  /** Runs a statement that returns no rows (INSERT, UPDATE, DELETE, CREATE TABLE …). */
  run(sql: string, ...params: unknown[]): AppRunResult
  /** The first row of a query, or undefined. */
  get<R = Record<string, unknown>>(sql: string, ...params: unknown[]): R | undefined
  /** Every row of a query. */
  all<R = Record<string, unknown>>(sql: string, ...params: unknown[]): R[]
}

/** Statements (and checked texts) kept per connection; the oldest goes first past this. */
const CACHE_SIZE = 256

/** First keywords refused outright: they end or nest the transaction, or change the whole file. */
const REFUSED_KEYWORDS = new Set(['BEGIN', 'COMMIT', 'END', 'ROLLBACK', 'SAVEPOINT', 'RELEASE', 'PRAGMA', 'ATTACH', 'DETACH', 'VACUUM', 'ANALYZE', 'REINDEX'])

/** Opcodes that end or nest a transaction (BEGIN, COMMIT, SAVEPOINT, RELEASE, however spelled). */
const TRANSACTION_OPCODES = new Set(['AutoCommit', 'Savepoint'])

let tableNames: ReadonlySet<string> | null = null

/**
 * The tables Postbox creates: every `CREATE TABLE` of schema.sql and of the migration steps
 * (lower case), so a table a new schema step adds is covered without a list to keep.
 */
export function postboxTables(): ReadonlySet<string> {
  if (tableNames !== null) return tableNames
  const names = new Set<string>()
  for (const text of [readSchemaSql(), ...MIGRATIONS]) {
    for (const m of text.matchAll(/CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?["`[]?(\w+)/gi)) names.add(m[1]!.toLowerCase())
  }
  tableNames = names
  return names
}

/** The statement's words outside comments and string literals, lower case (quoted identifiers keep their name). */
function words(sql: string): string[] {
  const bare = sql.replace(/--[^\n]*|\/\*[\s\S]*?(\*\/|$)|'(?:[^']|'')*'/g, ' ')
  return bare.toLowerCase().match(/[a-z_][a-z0-9_$]*/g) ?? []
}

const refuse = (message: string): AppError => new AppError('sql_refused', 403, message)

/** Every bound parameter list better-sqlite3 takes: positional values, or one object of named ones. */
type Params = unknown[]

/**
 * The application's SQL over `db`. Each text is checked once (then remembered) with EXPLAIN:
 * a statement that opens a write cursor on, clears or drops a Postbox table or one of its
 * indexes is refused, as is one that begins, commits or nests a transaction; a schema change
 * (anything writing sqlite_schema) is refused when it names a Postbox table, index or trigger.
 * Reads of Postbox's tables are allowed: they are not a stable interface (docs/outbox.md).
 */
export function createAppSql(db: Db): AppSql {
  const statements = new Map<string, Database.Statement>()
  const checked = new Set<string>()
  const remember = <V>(map: Map<string, V> | Set<string>, key: string, value?: V): void => {
    if (map.size >= CACHE_SIZE) map.delete(map.keys().next().value!)
    if (map instanceof Map) map.set(key, value as V)
    else map.add(key)
  }
  const tableOfRoot = db.prepare('SELECT tbl_name FROM sqlite_schema WHERE rootpage = ?').pluck()
  const postboxObjects = db.prepare('SELECT name, tbl_name FROM sqlite_schema')

  const check = (sql: string, params: Params): void => {
    if (checked.has(sql)) return
    const first = words(sql)[0]?.toUpperCase()
    if (first !== undefined && REFUSED_KEYWORDS.has(first)) throw refuse(`${first} is not allowed inside pb.transaction (Postbox owns the transaction and the file's settings)`)
    const tables = postboxTables()
    const program = db.prepare(`EXPLAIN ${sql}`).all(...params) as { opcode: string; p1: number; p2: number; p3: number }[]
    let schemaWrite = false
    for (const op of program) {
      if (TRANSACTION_OPCODES.has(op.opcode)) throw refuse('statements that begin, commit or nest a transaction are not allowed inside pb.transaction')
      const root = op.opcode === 'OpenWrite' ? (op.p3 === 0 ? op.p2 : null) : op.opcode === 'Clear' ? (op.p2 === 0 ? op.p1 : null) : op.opcode === 'Destroy' ? (op.p3 === 0 ? op.p1 : null) : null
      if (root === null) continue
      if (root === 1) {
        schemaWrite = true
        continue
      }
      const table = tableOfRoot.get(root) as string | undefined
      if (table !== undefined && tables.has(table.toLowerCase())) throw refuse(`${table} is Postbox's table: pb.transaction's sql writes the application's own tables only (send through events, notifications and requests)`)
    }
    if (schemaWrite) {
      const owned = new Set<string>(tables)
      for (const o of postboxObjects.all() as { name: string; tbl_name: string }[]) if (tables.has(o.tbl_name.toLowerCase())) owned.add(o.name.toLowerCase())
      const named = words(sql).find((w) => owned.has(w))
      if (named !== undefined) throw refuse(`this schema change names ${named}, which is Postbox's: the application's schema must not touch Postbox's tables, indexes or triggers`)
      return
    }
    remember(checked, sql)
  }
  const statement = (sql: string, params: Params): Database.Statement => {
    check(sql, params)
    let st = statements.get(sql)
    if (!st) remember(statements, sql, (st = db.prepare(sql)))
    return st
  }

  return {
    run(sql, ...params) {
      const r = statement(sql, params).run(...params)
      return { changes: r.changes, lastInsertRowid: r.lastInsertRowid }
    },
    get: <R>(sql: string, ...params: unknown[]) => statement(sql, params).get(...params) as R | undefined,
    all: <R>(sql: string, ...params: unknown[]) => statement(sql, params).all(...params) as R[],
  }
}
