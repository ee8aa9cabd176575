/**
 * The PostgreSQL schema's versions (docs/architecture.md, "The schema"). The version numbers are
 * SQLite's (SCHEMA_VERSION, src/store/schema.ts): a PostgreSQL database at version v has the tables
 * of a SQLite file at v. PostgreSQL support starts at PG_BASELINE_VERSION, so a new database gets
 * the current DDL (schema-admin + schema-core + schema-directory) in one transaction, and an older
 * one gets PG_MIGRATIONS' forward steps, each in its own transaction. A newer database is refused
 * with SchemaTooNewError, as on SQLite.
 *
 * Several nodes may start at once on one database: the whole check-and-migrate runs under a
 * session advisory lock, so one of them migrates and the others wait, then find the version
 * current. PostgreSQL's DDL is transactional, so a node killed mid-step leaves the previous
 * version, never half a step.
 */
import type pg from 'pg'
import { SCHEMA_VERSION, SchemaOutdatedError, SchemaTooNewError } from '../schema.js'
import { ADMIN_DDL, SCHEMA_META_DDL } from './schema-admin.js'
import { CORE_DDL, NEXT_IN_ORDER_TRIGGER } from './schema-core.js'
import { DIRECTORY_DDL } from './schema-directory.js'
import type { PgQueryable } from './queryable.js'

/** The first schema version PostgreSQL databases exist at: the baseline of their steps. */
export const PG_BASELINE_VERSION = 9

/**
 * Forward-only steps: PG_MIGRATIONS[i] takes a database from PG_BASELINE_VERSION + i to the
 * next version. Every SQLite step after the baseline needs its PostgreSQL twin here (the test
 * checks the counts agree), and the DDL files must be edited to the new version at the same time.
 */
export const PG_MIGRATIONS: readonly string[] = [
  /* v9 → v10: a notification's dedup_key is unique per application. */
  `
ALTER TABLE notifications DROP CONSTRAINT notifications_dedup_key_key;
CREATE UNIQUE INDEX notifications_dedup ON notifications (app_id, dedup_key) WHERE dedup_key IS NOT NULL;
`,
  /* v10 → v11: events lose their created_at index; retention walks them by id. */
  `
DROP INDEX events_created;
`,
  /* v11 → v12: a success's attempt is kept in its delivery row. */
  `
ALTER TABLE deliveries ADD COLUMN success_started_at bigint;
ALTER TABLE deliveries ADD COLUMN success_duration_ms bigint;
ALTER TABLE deliveries ADD COLUMN success_body text;
`,
  /* v12 → v13: the ordering trigger fires on completed_at, not status. */
  `
DROP TRIGGER deliveries_next_in_order ON deliveries;
${NEXT_IN_ORDER_TRIGGER}
`,
  /* v13 → v14: pull endpoints (docs/pull-endpoints.md): consumers claim, the dispatcher never does. */
  `
ALTER TABLE endpoints ADD COLUMN mode text NOT NULL DEFAULT 'push';
`,
]

/** The whole current schema of a new database, the version row included. */
export function pgSchemaDdl(): string {
  return `${SCHEMA_META_DDL}\n${ADMIN_DDL}\n${CORE_DDL}\n${DIRECTORY_DDL}\nINSERT INTO schema_meta (name, value) VALUES ('schema_version', ${SCHEMA_VERSION});\n`
}

/** Options for `migratePg`; as `openDatabase`'s `schema` and `onMigrate` (src/store/sqlite/db.ts). */
export interface PgMigrateOptions {
  /** `migrate` an older schema (default), require it `current` (a new empty database still gets the schema), or accept `any`. */
  schema?: 'migrate' | 'current' | 'any'
  /** Called after the schema was created or upgraded. */
  onMigrate?: (change: { from: number; to: number }) => void
}

/** Thrown when the database has tables but no Postbox version row: it is not Postbox's to change. */
export class NotPostboxDatabaseError extends Error {
  constructor(readonly schema: string) {
    super(`the PostgreSQL schema "${schema}" has tables but no Postbox schema_meta: it is not a Postbox database (give Postbox an empty database or schema)`)
    this.name = 'NotPostboxDatabaseError'
  }
}

// Per schema (current_schema()): two Postbox installs in two schemas of one database migrate independently.
const LOCK = `SELECT pg_advisory_lock(hashtextextended('postbox:migrate:' || current_schema(), 0))`
const UNLOCK = `SELECT pg_advisory_unlock(hashtextextended('postbox:migrate:' || current_schema(), 0))`
const SQL = {
  schemaName: `SELECT current_schema() AS name`,
  tables: `SELECT count(*) AS n, count(*) FILTER (WHERE tablename = 'schema_meta') AS meta FROM pg_tables WHERE schemaname = current_schema()`,
  version: `SELECT value FROM schema_meta WHERE name = 'schema_version'`,
  setVersion: `UPDATE schema_meta SET value = $1 WHERE name = 'schema_version'`,
} as const

/** The database's schema version: 0 when it is empty, null when it has tables but is not Postbox's. */
export async function pgSchemaVersion(q: PgQueryable): Promise<number | null> {
  const t = (await q.query<{ n: number; meta: number }>(SQL.tables)).rows[0]!
  if (Number(t.meta) === 0) return Number(t.n) === 0 ? 0 : null
  const row = (await q.query<{ value: number }>(SQL.version)).rows[0]
  return row ? Number(row.value) : null
}

/**
 * Brings the database's schema to SCHEMA_VERSION (or checks it, per `opts.schema`) under the
 * migration lock; returns the version found and the version left.
 */
export async function migratePg(pool: pg.Pool, opts: PgMigrateOptions = {}): Promise<{ from: number; to: number }> {
  if (PG_BASELINE_VERSION + PG_MIGRATIONS.length !== SCHEMA_VERSION) {
    throw new Error(`this Postbox is built for schema version ${SCHEMA_VERSION} but has PostgreSQL steps up to ${PG_BASELINE_VERSION + PG_MIGRATIONS.length}: every SQLite step needs its PostgreSQL twin (src/store/pg/migrations.ts)`)
  }
  const mode = opts.schema ?? 'migrate'
  const client = await pool.connect()
  let locked = false
  let failed: Error | undefined
  try {
    const schema = (await client.query<{ name: string | null }>(SQL.schemaName)).rows[0]?.name
    if (!schema) throw new Error('the PostgreSQL search_path names no existing schema for Postbox to use')
    await client.query(LOCK)
    locked = true
    const from = await pgSchemaVersion(client)
    if (from === null) throw new NotPostboxDatabaseError(schema)
    if (mode === 'any') return { from, to: from }
    if (from > SCHEMA_VERSION) throw new SchemaTooNewError(from, SCHEMA_VERSION)
    if (from === SCHEMA_VERSION) return { from, to: from }
    if (from === 0) {
      await inTransaction(client, () => client.query(pgSchemaDdl()))
    } else {
      if (from < PG_BASELINE_VERSION) throw new Error(`PostgreSQL schema version ${from} predates PostgreSQL support (version ${PG_BASELINE_VERSION}); this database was not written by Postbox`)
      if (mode === 'current') throw new SchemaOutdatedError(from, SCHEMA_VERSION)
      for (let v = from; v < SCHEMA_VERSION; v++) {
        await inTransaction(client, async () => {
          await client.query(PG_MIGRATIONS[v - PG_BASELINE_VERSION]!)
          await client.query(SQL.setVersion, [v + 1])
        })
      }
    }
    const change = { from, to: SCHEMA_VERSION }
    opts.onMigrate?.(change)
    return change
  } finally {
    // A connection that cannot unlock is dropped, which ends its session and so its lock.
    if (locked) await client.query(UNLOCK).catch((e: unknown) => (failed = e instanceof Error ? e : new Error(String(e))))
    client.release(failed)
  }
}

async function inTransaction(client: pg.PoolClient, fn: () => Promise<unknown>): Promise<void> {
  await client.query('BEGIN')
  try {
    await fn()
    await client.query('COMMIT')
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw err
  }
}
