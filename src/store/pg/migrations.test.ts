import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type pg from 'pg'
import { PG_URL, freshPgDatabase } from '../../../test/support/pg.js'
import { SCHEMA_VERSION, SchemaOutdatedError, SchemaTooNewError } from '../schema.js'
import { NotPostboxDatabaseError, PG_BASELINE_VERSION, PG_MIGRATIONS, migratePg, pgSchemaVersion } from './migrations.js'
import { createPgPool } from './pool.js'

describe('PostgreSQL schema versions', () => {
  it('has a PostgreSQL step for every SQLite step after the baseline', () => {
    expect(PG_BASELINE_VERSION + PG_MIGRATIONS.length).toBe(SCHEMA_VERSION)
  })
})

describe.runIf(PG_URL)('migratePg', () => {
  let db: { url: string; drop: () => Promise<void> }
  let pool: pg.Pool
  beforeAll(async () => {
    db = await freshPgDatabase()
    pool = createPgPool(db.url, { max: 12 })
  })
  afterAll(async () => {
    await pool?.end()
    await db?.drop()
  })

  it('creates the current schema once when several nodes start at once', async () => {
    const seen: { from: number; to: number }[] = []
    const results = await Promise.all(Array.from({ length: 6 }, () => migratePg(pool, { onMigrate: (c) => seen.push(c) })))
    expect(seen).toEqual([{ from: 0, to: SCHEMA_VERSION }])
    expect(results.filter((r) => r.from === 0)).toHaveLength(1)
    expect(results.every((r) => r.to === SCHEMA_VERSION)).toBe(true)
    expect(await pgSchemaVersion(pool)).toBe(SCHEMA_VERSION)
    const tables = (await pool.query<{ tablename: string }>(`SELECT tablename FROM pg_tables WHERE schemaname = current_schema()`)).rows.map((r) => r.tablename)
    expect(tables).toEqual(expect.arrayContaining(['schema_meta', 'api_keys', 'apps', 'portal_tokens', 'event_types', 'deliveries', 'endpoints']))
    const app = (await pool.query<{ id: string; created_at: number }>(`SELECT id, created_at FROM apps`)).rows
    expect(app).toEqual([{ id: 'default', created_at: expect.any(Number) }])
  })

  it('leaves a current database alone, and accepts it in every mode', async () => {
    expect(await migratePg(pool)).toEqual({ from: SCHEMA_VERSION, to: SCHEMA_VERSION })
    expect(await migratePg(pool, { schema: 'current' })).toEqual({ from: SCHEMA_VERSION, to: SCHEMA_VERSION })
    expect(await migratePg(pool, { schema: 'any' })).toEqual({ from: SCHEMA_VERSION, to: SCHEMA_VERSION })
  })

  it('refuses a newer schema with the SQLite error, except with schema any', async () => {
    await pool.query(`UPDATE schema_meta SET value = $1 WHERE name = 'schema_version'`, [SCHEMA_VERSION + 1])
    try {
      const err = await migratePg(pool).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(SchemaTooNewError)
      expect(err).toMatchObject({ found: SCHEMA_VERSION + 1, supported: SCHEMA_VERSION })
      await expect(migratePg(pool, { schema: 'current' })).rejects.toBeInstanceOf(SchemaTooNewError)
      expect(await migratePg(pool, { schema: 'any' })).toEqual({ from: SCHEMA_VERSION + 1, to: SCHEMA_VERSION + 1 })
    } finally {
      await pool.query(`UPDATE schema_meta SET value = $1 WHERE name = 'schema_version'`, [SCHEMA_VERSION])
    }
  })

  it('refuses an older schema with schema current, as SQLite does', async () => {
    if (PG_MIGRATIONS.length === 0) {
      // No version before the baseline exists on PostgreSQL: such a row was not written by Postbox.
      await pool.query(`UPDATE schema_meta SET value = $1 WHERE name = 'schema_version'`, [PG_BASELINE_VERSION - 1])
      try {
        await expect(migratePg(pool)).rejects.toThrow(/predates PostgreSQL support/)
      } finally {
        await pool.query(`UPDATE schema_meta SET value = $1 WHERE name = 'schema_version'`, [SCHEMA_VERSION])
      }
      return
    }
    await pool.query(`UPDATE schema_meta SET value = $1 WHERE name = 'schema_version'`, [SCHEMA_VERSION - 1])
    try {
      await expect(migratePg(pool, { schema: 'current' })).rejects.toBeInstanceOf(SchemaOutdatedError)
    } finally {
      await pool.query(`UPDATE schema_meta SET value = $1 WHERE name = 'schema_version'`, [SCHEMA_VERSION])
    }
  })

  it('v9 → current keeps every notification, makes dedup_key unique per application, drops events_created, adds the row-kept success attempt and fires the ordering trigger on completed_at', async () => {
    const old = await freshPgDatabase()
    const p = createPgPool(old.url, { max: 2 })
    try {
      // The schema as version 9 made it: dedup_key unique over every application.
      await migratePg(p)
      await p.query(`DROP INDEX notifications_dedup; ALTER TABLE notifications ADD CONSTRAINT notifications_dedup_key_key UNIQUE (dedup_key);
        CREATE INDEX events_created ON events (created_at);
        ALTER TABLE deliveries DROP COLUMN success_started_at, DROP COLUMN success_duration_ms, DROP COLUMN success_body;
        DROP TRIGGER deliveries_next_in_order ON deliveries;
        CREATE TRIGGER deliveries_next_in_order AFTER UPDATE OF status ON deliveries FOR EACH ROW EXECUTE FUNCTION deliveries_next_in_order();
        ALTER TABLE endpoints DROP COLUMN mode;
        UPDATE schema_meta SET value = 9 WHERE name = 'schema_version'`)
      await p.query(`INSERT INTO notifications (id, app_id, topic, dedup_key, request, recipients, deliveries, created_at) VALUES ('ntf_1', 'a', 't', 'k1', '{}', 2, 3, 10)`)
      expect(await migratePg(p)).toEqual({ from: 9, to: SCHEMA_VERSION })
      expect((await p.query(`SELECT id, app_id, dedup_key, recipients FROM notifications`)).rows).toEqual([{ id: 'ntf_1', app_id: 'a', dedup_key: 'k1', recipients: 2 }])
      await p.query(`INSERT INTO notifications (id, app_id, topic, dedup_key, request, recipients, deliveries, created_at) VALUES ('ntf_2', 'b', 't', 'k1', '{}', 0, 0, 1)`)
      await expect(p.query(`INSERT INTO notifications (id, app_id, topic, dedup_key, request, recipients, deliveries, created_at) VALUES ('ntf_3', 'a', 't', 'k1', '{}', 0, 0, 1)`)).rejects.toMatchObject({ code: '23505' })
      // v10 → v11 dropped the events' created_at index.
      expect((await p.query(`SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'events' ORDER BY indexname`)).rows.map((r) => r.indexname))
        .toEqual(['events_app', 'events_client_id', 'events_pkey', 'events_type'])
      // v13 → v14 added the endpoints' mode, push for every endpoint there was.
      expect((await p.query(`SELECT column_default FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'endpoints' AND column_name = 'mode'`)).rows)
        .toEqual([{ column_default: "'push'::text" }])
      // v11 → v12 added the success's attempt kept in the delivery row.
      expect((await p.query(`SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'deliveries'
        AND column_name LIKE 'success_%' ORDER BY column_name`)).rows.map((r) => r.column_name)).toEqual(['success_body', 'success_duration_ms', 'success_started_at'])
      // v12 → v13 declared the ordering trigger on completed_at.
      expect((await p.query(`SELECT event_object_column FROM information_schema.triggered_update_columns
        WHERE trigger_schema = current_schema() AND trigger_name = 'deliveries_next_in_order'`)).rows).toEqual([{ event_object_column: 'completed_at' }])
    } finally {
      await p.end()
      await old.drop()
    }
  })

  it('refuses a database that has tables of something else', async () => {
    const other = await freshPgDatabase()
    const p = createPgPool(other.url, { max: 2 })
    try {
      await p.query(`CREATE TABLE customers (id int)`)
      await expect(migratePg(p)).rejects.toBeInstanceOf(NotPostboxDatabaseError)
      expect(await pgSchemaVersion(p)).toBeNull()
    } finally {
      await p.end()
      await other.drop()
    }
  })
})
