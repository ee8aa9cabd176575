import pg from 'pg'
import type { PgQueryable } from './queryable.js'

/**
 * Runs `fn` as one transaction: on a pool, on one client between BEGIN and COMMIT (ROLLBACK on a
 * throw); on anything else (a transaction's client, per PgQueryable) as is, inside the caller's
 * transaction, as SQLite's families do inside `db.inTransaction`. So a family must be given the
 * pg.Pool itself (not a wrapper of it) or one transaction's client. `withCommit(out)` may name
 * statements without parameters (a constant pg_notify) to run last in the transaction: on a pool
 * they go in the COMMIT's round trip, and a failing one rolls the transaction back.
 */
export async function atomically<T>(q: PgQueryable, fn: (c: PgQueryable) => Promise<T>, withCommit?: (out: T) => string | null): Promise<T> {
  if (!(q instanceof pg.Pool)) {
    const out = await fn(q)
    const last = withCommit?.(out)
    if (last) await q.query(last)
    return out
  }
  const c = await q.connect()
  // A connection whose ROLLBACK failed is in an unknown state: it is closed, not pooled again.
  let broken = false
  try {
    await c.query('BEGIN')
    const out = await fn(c)
    const last = withCommit?.(out)
    // Simple protocol, one message: after an error PostgreSQL skips the rest, COMMIT included.
    await c.query(last ? `${last}; COMMIT` : 'COMMIT')
    return out
  } catch (err) {
    await c.query('ROLLBACK').catch(() => (broken = true))
    throw err
  } finally {
    c.release(broken)
  }
}

/** `cols` (SQLite's column list, `a_b AS aB`) with its aliases quoted, which PostgreSQL would fold to lower case. */
export const quoteAliases = (cols: string): string => cols.replace(/ AS (\w+)/g, ' AS "$1"')
