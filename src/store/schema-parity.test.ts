import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type pg from 'pg'
import { PG_URL, freshPgDatabase } from '../../test/support/pg.js'
import { tempDir } from '../../test/helpers.js'
import { openDatabase } from './sqlite/db.js'
import { migratePg } from './pg/migrations.js'
import { createPgPool } from './pg/pool.js'

/** SQLite-only tables: the serving lease of one file (PostgreSQL needs no leader: every node claims). */
const SQLITE_ONLY = new Set(['locks'])
/** The PostgreSQL type each SQLite column type may become (schema-admin.ts). */
const TYPES: Record<string, string[]> = { INTEGER: ['bigint', 'integer'], TEXT: ['text'], REAL: ['double precision'] }

/**
 * The PostgreSQL schema has every table and column of schema.sql (the truth), each with its
 * type's counterpart and its NOT NULL: the PostgreSQL families read and write the same rows.
 */
describe.runIf(PG_URL)('PostgreSQL schema parity with schema.sql', () => {
  let db: { url: string; drop: () => Promise<void> }
  let pool: pg.Pool
  let sqlite: Map<string, Map<string, { type: string; notnull: boolean }>>
  let postgres: Map<string, Map<string, { type: string; notnull: boolean }>>
  beforeAll(async () => {
    const dir = tempDir()
    const s = openDatabase(join(dir.dir, 'postbox.db'))
    sqlite = new Map()
    for (const { name } of s.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).all() as { name: string }[]) {
      if (SQLITE_ONLY.has(name)) continue
      const cols = s.pragma(`table_info(${name})`) as { name: string; type: string; notnull: number; pk: number }[]
      sqlite.set(name, new Map(cols.map((c) => [c.name, { type: c.type.toUpperCase(), notnull: c.notnull === 1 || (c.pk > 0 && c.type.toUpperCase() === 'INTEGER') }])))
    }
    s.close()
    dir.cleanup()
    db = await freshPgDatabase()
    pool = createPgPool(db.url, { max: 2 })
    await migratePg(pool)
    const { rows } = await pool.query<{ t: string; c: string; type: string; nullable: string }>(
      `SELECT table_name AS t, column_name AS c, data_type AS type, is_nullable AS nullable FROM information_schema.columns WHERE table_schema = current_schema()`,
    )
    postgres = new Map()
    for (const r of rows) {
      if (!postgres.has(r.t)) postgres.set(r.t, new Map())
      postgres.get(r.t)!.set(r.c, { type: r.type, notnull: r.nullable === 'NO' })
    }
  })
  afterAll(async () => {
    await pool?.end()
    await db?.drop()
  })

  it('has every table', () => {
    expect([...sqlite.keys()].filter((t) => !postgres.has(t))).toEqual([])
  })

  it('has every column, with its type and NOT NULL', () => {
    const problems: string[] = []
    for (const [table, cols] of sqlite) {
      const pgCols = postgres.get(table)
      if (!pgCols) continue
      for (const [col, { type, notnull }] of cols) {
        const p = pgCols.get(col)
        if (!p) problems.push(`${table}.${col}: missing`)
        else {
          if (!(TYPES[type] ?? []).includes(p.type)) problems.push(`${table}.${col}: ${type} became ${p.type}`)
          if (notnull && !p.notnull) problems.push(`${table}.${col}: NOT NULL lost`)
        }
      }
    }
    expect(problems).toEqual([])
  })
})
