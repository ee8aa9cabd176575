import Database from 'better-sqlite3'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openDatabase, schemaVersion } from '../src/store/sqlite/db.js'
import { MIGRATIONS } from '../src/store/sqlite/migrations.js'
import { SCHEMA_VERSION } from '../src/store/schema.js'
import { postboxTables } from '../src/store/sqlite/app-sql.js'
import { Postbox } from '../src/postbox.js'
import { tempDir } from './helpers.js'

/**
 * docs/outbox.md: Postbox's migrations never touch tables it did not create. An application's tables
 * (with an index, a trigger, a view and an AUTOINCREMENT key) sit in the file across every
 * upgrade path: from before Postbox's first open, from its oldest schema, and a current file.
 */

const APP_SCHEMA = `
CREATE TABLE orders (id INTEGER PRIMARY KEY AUTOINCREMENT, ref TEXT NOT NULL UNIQUE, total INTEGER NOT NULL, note TEXT);
CREATE INDEX orders_total ON orders (total);
CREATE TABLE order_log (order_id INTEGER REFERENCES orders (id), what TEXT);
CREATE TRIGGER orders_logged AFTER INSERT ON orders BEGIN INSERT INTO order_log VALUES (new.id, 'created'); END;
CREATE VIEW big_orders AS SELECT ref FROM orders WHERE total > 100;
`

/** Every application object's SQL and every application row, as found. */
function appState(path: string): { objects: unknown[]; orders: unknown[]; log: unknown[]; seq: unknown[] } {
  const db = new Database(path, { readonly: true })
  try {
    const pb = postboxTables()
    const objects = (db.prepare(`SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY name`).all() as { tbl_name: string }[]).filter(
      (o) => !pb.has(o.tbl_name.toLowerCase()),
    )
    return {
      objects,
      orders: db.prepare('SELECT * FROM orders ORDER BY id').all(),
      log: db.prepare('SELECT * FROM order_log ORDER BY rowid').all(),
      seq: db.prepare(`SELECT * FROM sqlite_sequence WHERE name = 'orders'`).all(),
    }
  } finally {
    db.close()
  }
}

/** Writes the application's schema and rows into the file at `path` (raw, as the application would). */
function writeAppTables(path: string, before?: (db: Database.Database) => void): void {
  const db = new Database(path)
  try {
    before?.(db)
    db.exec(APP_SCHEMA)
    const ins = db.prepare('INSERT INTO orders (ref, total, note) VALUES (?, ?, ?)')
    for (let i = 0; i < 50; i++) ins.run(`r${i}`, i * 7, i % 3 === 0 ? null : `note ${i}`)
    db.exec(`DELETE FROM order_log WHERE order_id = 50; DELETE FROM orders WHERE id = 50`)
  } finally {
    db.close()
  }
}

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.reverse()) await c()
  cleanups.length = 0
})

describe("an application's tables across Postbox's migrations", () => {
  it('from the oldest schema (v1) to the current one, every step leaves them as they were', () => {
    const t = tempDir('postbox-apptables-')
    cleanups.push(t.cleanup)
    const path = join(t.dir, 'postbox.db')
    writeAppTables(path, (db) => {
      db.exec(MIGRATIONS[0]!)
      db.pragma('user_version = 1')
    })
    const before = appState(path)
    expect(before.orders).toHaveLength(49)
    const db = openDatabase(path)
    expect(schemaVersion(db)).toBe(SCHEMA_VERSION)
    db.close()
    expect(appState(path)).toEqual(before)
  })

  it('from a file the application wrote before Postbox first opened it (user_version 0): every step runs, the tables stay', async () => {
    const t = tempDir('postbox-apptables-')
    cleanups.push(t.cleanup)
    const path = join(t.dir, 'postbox.db')
    writeAppTables(path)
    const before = appState(path)
    const pb = await Postbox.open({ db: path, bootstrapAdminKey: false })
    await pb.events.send({ type: 'x', data: {} })
    await pb.close()
    expect(appState(path)).toEqual(before)
    const check = new Database(path, { readonly: true })
    expect(schemaVersion(check)).toBe(SCHEMA_VERSION)
    expect(check.pragma('integrity_check', { simple: true })).toBe('ok')
    check.close()
  })

  it('a current file opened again (serve, migrate) is left alone, tables written through pb.transaction included', async () => {
    const t = tempDir('postbox-apptables-')
    cleanups.push(t.cleanup)
    const path = join(t.dir, 'postbox.db')
    let pb = await Postbox.open({ db: path, bootstrapAdminKey: false })
    await pb.transaction(async (tx) => {
      await tx.sql.run('CREATE TABLE orders (id INTEGER PRIMARY KEY AUTOINCREMENT, ref TEXT NOT NULL UNIQUE, total INTEGER NOT NULL, note TEXT)')
      await tx.sql.run('CREATE INDEX orders_total ON orders (total)')
      await tx.sql.run('CREATE TABLE order_log (order_id INTEGER REFERENCES orders (id), what TEXT)')
      await tx.sql.run(`CREATE TRIGGER orders_logged AFTER INSERT ON orders BEGIN INSERT INTO order_log VALUES (new.id, 'created'); END`)
      for (let i = 0; i < 5; i++) await tx.sql.run('INSERT INTO orders (ref, total) VALUES (?, ?)', `r${i}`, i)
    })
    await pb.close()
    const before = appState(path)
    expect(before.log).toHaveLength(5)
    pb = await Postbox.open({ db: path, bootstrapAdminKey: false })
    await pb.close()
    openDatabase(path, { schema: 'migrate' }).close()
    expect(appState(path)).toEqual(before)
  })
})
