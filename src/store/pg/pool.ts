import pg from 'pg'
import type { PgQueryable } from './queryable.js'
import { atomically } from './atomic.js'

/** The environment variable that selects PostgreSQL (docs/operations.md): a `postgres://…` URL. */
export const DATABASE_URL_ENV = 'POSTBOX_DATABASE_URL'

/** Connections per node when the caller sets none: the dispatcher's claim and settle, the API, listeners. */
export const DEFAULT_POOL_MAX = 10

/** How long opening a connection may take before it fails (a server that is gone answers at once; one behind a dead route never would). */
export const CONNECT_TIMEOUT_MS = 10_000

/** True for a PostgreSQL connection URL (`postgres://` or `postgresql://`). */
export function isPgUrl(value: string): boolean {
  return /^postgres(?:ql)?:\/\//i.test(value)
}

/** The PostgreSQL URL of the environment, or undefined when the SQLite file is to be used. */
export function databaseUrlFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const url = env[DATABASE_URL_ENV]?.trim()
  return url ? url : undefined
}

/** The URL with its password left out (kept in url.ts, which does not load `pg`). */
export { redactPgUrl } from './url.js'

/**
 * Parsers for this pool's connections only, never pg's global ones (another library in the
 * process may rely on them). SQLite hands integers back as numbers, so int8 (count(*), every
 * bigint column) and numeric (sum() of bigint) are read as numbers too: Postbox's integers are
 * epoch milliseconds, counters and sizes, all far below 2^53.
 */
function postboxTypes(): pg.CustomTypesConfig {
  const types = new pg.TypeOverrides()
  const toNumber = (v: string): number => Number(v)
  types.setTypeParser(pg.types.builtins.INT8, 'text', toNumber)
  types.setTypeParser(pg.types.builtins.NUMERIC, 'text', toNumber)
  return types
}

/** Options for `createPgPool`. */
export interface PgPoolOptions {
  /** Most connections open at once (DEFAULT_POOL_MAX). */
  max?: number
  /**
   * A connection's error (the server restarted or terminated the backend, the network dropped),
   * idle or checked out: without a listener it would crash the process. A checked-out one also
   * fails its statement, so its caller sees the error; the pool then drops the connection.
   */
  onError?: (err: Error) => void
  /** Shown in pg_stat_activity. */
  applicationName?: string
  /** Sends each parameterised statement as a named prepared statement (default true; see PreparingClient). */
  preparedStatements?: boolean
}

/** Most distinct statement texts given a name; texts beyond it run unnamed (each connection keeps what it prepared). */
export const PREPARED_LIMIT = 1_000

const statementNames = new Map<string, string>()

/** The name of `text`'s prepared statement, or undefined once PREPARED_LIMIT texts have names. */
function statementName(text: string): string | undefined {
  let name = statementNames.get(text)
  if (name === undefined && statementNames.size < PREPARED_LIMIT) statementNames.set(text, (name = `pb_${statementNames.size + 1}`))
  return name
}

/**
 * A connection that sends every statement with parameters as a named prepared statement, so
 * PostgreSQL parses and plans a text once per connection instead of at every call (about a
 * third of a light-load delivery's time; docs/performance.md "PostgreSQL"). Postbox's SQL is a
 * fixed set of texts (values always go in parameters), so the names stay few. Statements
 * without parameters (BEGIN, COMMIT, LISTEN) use the simple protocol as before.
 */
class PreparingClient extends pg.Client {
  // Forwards every one of pg's overloads unchanged but the first two arguments, so it cannot restate them one by one.
  override query(...args: unknown[]): never {
    const [text, values] = args
    if (typeof text === 'string' && Array.isArray(values)) {
      const name = statementName(text)
      if (name !== undefined) args.splice(0, 2, { name, text, values })
    }
    return (super.query as (...a: unknown[]) => never)(...args)
  }
}

/** A pg.Pool on `url` whose connections read int8 and numeric as JS numbers and (unless turned off) prepare their statements. */
export function createPgPool(url: string, opts: PgPoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    ...(opts.preparedStatements === false ? {} : { Client: PreparingClient }),
    connectionString: url,
    max: opts.max ?? DEFAULT_POOL_MAX,
    types: postboxTypes(),
    application_name: opts.applicationName ?? 'postbox',
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // A peer that vanished without closing (a failover, a dead route) is found by TCP keepalives.
    keepAlive: true,
  })
  const onError = opts.onError ?? (() => {})
  // pg-pool listens for 'error' only while a connection is idle; one checked out (a transaction,
  // the migration's session lock) that loses its backend emits 'error' with no listener, which
  // kills the process. Every connection gets its own listener for its whole life.
  pool.on('connect', (client) => client.on('error', onError))
  // The pool's own 'error' is an idle connection's, which its listener above has reported.
  pool.on('error', () => {})
  return pool
}

/** Runs `fn` in one transaction on one of the pool's connections: COMMIT when it resolves, ROLLBACK when it throws. */
export const withPgTransaction = <T>(pool: pg.Pool, fn: (q: PgQueryable) => Promise<T>): Promise<T> => atomically(pool, fn)
