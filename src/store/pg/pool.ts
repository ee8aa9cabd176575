import pg from 'pg'
import type { PgQueryable } from './queryable.js'
import { atomically } from './atomic.js'

/** The environment variable that selects PostgreSQL (docs/operations.md): a `postgres://…` URL. */
export const DATABASE_URL_ENV = 'POSTBOX_DATABASE_URL'

/** Connections per node when the caller sets none: the dispatcher's claim and settle, the API, listeners. */
export const DEFAULT_POOL_MAX = 10

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
  /** An idle connection's error (the server restarted, the network dropped); without a listener it would crash the process. */
  onError?: (err: Error) => void
  /** Shown in pg_stat_activity. */
  applicationName?: string
}

/** A pg.Pool on `url` whose connections read int8 and numeric as JS numbers. */
export function createPgPool(url: string, opts: PgPoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? DEFAULT_POOL_MAX,
    types: postboxTypes(),
    application_name: opts.applicationName ?? 'postbox',
  })
  pool.on('error', opts.onError ?? (() => {}))
  return pool
}

/** Runs `fn` in one transaction on one of the pool's connections: COMMIT when it resolves, ROLLBACK when it throws. */
export const withPgTransaction = <T>(pool: pg.Pool, fn: (q: PgQueryable) => Promise<T>): Promise<T> => atomically(pool, fn)
