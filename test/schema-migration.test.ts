import Database from 'better-sqlite3'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { migrate, openDatabase, readSchemaSql, schemaVersion, type Db } from '../src/store/sqlite/db.js'
import { SCHEMA_VERSION, SchemaTooNewError } from '../src/store/schema.js'
import { createDeliveriesStore } from '../src/store/sqlite/deliveries.js'
import { MIGRATIONS } from '../src/store/sqlite/migrations.js'
import { consolidateSchema, pickFreshSchema } from '../src/store/sqlite/fresh-schema.js'
import { tempDir } from './helpers.js'

/** Strips comments and collapses whitespace so only meaningful SQL differences remain. */
function normalise(sql: string | null): string | null {
  if (sql === null) return null
  return sql
    .replace(/--[^\n]*/g, '')
    .replace(/\s+/g, ' ')
    .replace(/\s*([(),])\s*/g, '$1')
    .trim()
}

/** A comparable snapshot of every table, index, view and trigger, with columns and indexes. */
function snapshot(db: Db): Record<string, unknown> {
  const objects = db
    .prepare(`SELECT type, name, tbl_name AS tbl, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name`)
    .all() as { type: string; name: string; tbl: string; sql: string | null }[]
  const out: Record<string, unknown> = {}
  for (const o of objects) {
    const entry: Record<string, unknown> = { type: o.type, tbl: o.tbl, sql: normalise(o.sql) }
    if (o.type === 'table') {
      entry.columns = db.pragma(`table_info(${JSON.stringify(o.name)})`)
      entry.indexes = (db.pragma(`index_list(${JSON.stringify(o.name)})`) as { name: string }[])
        .map((ix) => ({ ...ix, columns: db.pragma(`index_xinfo(${JSON.stringify(ix.name)})`) }))
        .sort((a, b) => a.name.localeCompare(b.name))
      entry.foreignKeys = db.pragma(`foreign_key_list(${JSON.stringify(o.name)})`)
    }
    out[`${o.type}:${o.name}`] = entry
  }
  return out
}

describe('schema migrations', () => {
  let cleanup: (() => void) | null = null
  afterEach(() => {
    cleanup?.()
    cleanup = null
  })

  it('a database created at the oldest version and migrated equals a fresh one', () => {
    const t = tempDir()
    cleanup = t.cleanup
    const oldPath = join(t.dir, 'old.db')
    const raw = new Database(oldPath)
    raw.exec(MIGRATIONS[0]!)
    raw.pragma('user_version = 1')
    raw.close()

    const migrated = openDatabase(oldPath)
    const fresh = openDatabase(join(t.dir, 'fresh.db'))
    try {
      expect(schemaVersion(migrated)).toBe(SCHEMA_VERSION)
      expect(schemaVersion(fresh)).toBe(SCHEMA_VERSION)
      const a = snapshot(migrated)
      const b = snapshot(fresh)
      expect(Object.keys(a)).toEqual(Object.keys(b))
      for (const key of Object.keys(b)) expect({ key, ...(a[key] as object) }).toEqual({ key, ...(b[key] as object) })
    } finally {
      migrated.close()
      fresh.close()
    }
  })

  it("a file created from the build's consolidated schema equals one created from schema.sql, and the build uses it only with that schema.sql", () => {
    const t = tempDir()
    cleanup = t.cleanup
    const sql = readSchemaSql()
    const consolidated = consolidateSchema(sql)
    // Replaying the history runs every ALTER and rebuild; the consolidated text has none.
    expect(consolidated).not.toMatch(/ALTER TABLE|DROP |_v10/)
    const fromHistory = new Database(join(t.dir, 'history.db'))
    const fromConsolidated = new Database(join(t.dir, 'consolidated.db'))
    try {
      migrate(fromHistory, () => sql)
      migrate(fromConsolidated, () => consolidated)
      expect(schemaVersion(fromConsolidated)).toBe(SCHEMA_VERSION)
      const a = snapshot(fromConsolidated)
      const b = snapshot(fromHistory)
      expect(Object.keys(a)).toEqual(Object.keys(b))
      for (const key of Object.keys(b)) expect({ key, ...(a[key] as object) }).toEqual({ key, ...(b[key] as object) })
      const app = (d: Db) => d.prepare(`SELECT id, name, metadata, deleted_at, created_at > 0 AS dated FROM apps`).all()
      expect(app(fromConsolidated)).toEqual(app(fromHistory))
      expect(app(fromConsolidated)).toEqual([{ id: 'default', name: 'Default', metadata: '{}', deleted_at: null, dated: 1 }])
    } finally {
      fromHistory.close()
      fromConsolidated.close()
    }
    expect(pickFreshSchema(sql, consolidated)).toBe(consolidated)
    // Made from another schema.sql (a stale dist/), or missing, or not ours: schema.sql itself.
    expect(pickFreshSchema(`${sql}\n-- changed`, consolidated)).toBe(`${sql}\n-- changed`)
    expect(pickFreshSchema(sql, null)).toBe(sql)
    expect(pickFreshSchema(sql, 'CREATE TABLE x (a);')).toBe(sql)
    // A step that seeds rows the consolidated text cannot carry fails the build.
    expect(() => consolidateSchema(`${sql}\nINSERT INTO event_types (name, version, created_at, updated_at) VALUES ('t', 1, 0, 0);`)).toThrow(/rows in event_types/)
  })

  it('v8 → v9 gives every row the default application, and client ids stay unique per application', () => {
    const t = tempDir()
    cleanup = t.cleanup
    const path = join(t.dir, 'v8.db')
    const raw = new Database(path)
    for (const step of MIGRATIONS.slice(0, 8)) raw.exec(step)
    raw.pragma('user_version = 8')
    raw.exec(`INSERT INTO events (id, client_id, type, body, created_at) VALUES ('evt_1', 'c1', 't', '{}', 1);
      INSERT INTO endpoints (id, url, secret, created_at, updated_at) VALUES ('ep_1', 'https://example.com', 's', 1, 1);
      INSERT INTO api_keys (id, name, role, hash, prefix, created_at) VALUES ('key_1', 'k', 'admin', 'h', 'p', 1);`)
    raw.close()
    const db = openDatabase(path)
    try {
      expect(db.prepare(`SELECT id FROM apps WHERE deleted_at IS NULL`).pluck().all()).toEqual(['default'])
      expect(db.prepare(`SELECT app_id FROM events UNION ALL SELECT app_id FROM endpoints`).pluck().all()).toEqual(['default', 'default'])
      expect(db.prepare(`SELECT app_id FROM api_keys`).pluck().get()).toBeNull()
      db.exec(`INSERT INTO apps (id, name, created_at, updated_at) VALUES ('b', 'B', 1, 1);
        INSERT INTO events (id, app_id, client_id, type, body, created_at) VALUES ('evt_2', 'b', 'c1', 't', '{}', 2)`)
      expect(() => db.exec(`INSERT INTO events (id, app_id, client_id, type, body, created_at) VALUES ('evt_3', 'b', 'c1', 't', '{}', 3)`)).toThrow(/UNIQUE/)
    } finally {
      db.close()
    }
  })

  it('v9 → v10 keeps every notification, its receipts trigger, and makes dedup_key unique per application', () => {
    const t = tempDir()
    cleanup = t.cleanup
    const path = join(t.dir, 'v9.db')
    const raw = new Database(path)
    for (const step of MIGRATIONS.slice(0, 9)) raw.exec(step)
    raw.pragma('user_version = 9')
    raw.exec(`INSERT INTO notifications (id, app_id, topic, tags, dedup_key, request, recipients, deliveries, created_at)
        VALUES ('ntf_1', 'a', 't', '["x"]', 'k1', '{}', 2, 3, 10), ('ntf_2', 'default', 't', '[]', NULL, '{}', 0, 0, 11);
      INSERT INTO notification_clicks (notification_id, recipient, clicked_at) VALUES ('ntf_1', 'u1', 12);`)
    expect(() => raw.exec(`INSERT INTO notifications (id, app_id, topic, dedup_key, request, recipients, deliveries, created_at) VALUES ('ntf_3', 'b', 't', 'k1', '{}', 0, 0, 1)`)).toThrow(/UNIQUE/)
    raw.close()
    const db = openDatabase(path)
    try {
      expect(schemaVersion(db)).toBe(SCHEMA_VERSION)
      expect(db.prepare(`SELECT id, app_id, topic, tags, dedup_key, recipients, deliveries, created_at FROM notifications ORDER BY id`).all()).toEqual([
        { id: 'ntf_1', app_id: 'a', topic: 't', tags: '["x"]', dedup_key: 'k1', recipients: 2, deliveries: 3, created_at: 10 },
        { id: 'ntf_2', app_id: 'default', topic: 't', tags: '[]', dedup_key: null, recipients: 0, deliveries: 0, created_at: 11 },
      ])
      // Another application may now use the key; the same application still may not.
      db.exec(`INSERT INTO notifications (id, app_id, topic, dedup_key, request, recipients, deliveries, created_at) VALUES ('ntf_3', 'b', 't', 'k1', '{}', 0, 0, 1)`)
      expect(() => db.exec(`INSERT INTO notifications (id, app_id, topic, dedup_key, request, recipients, deliveries, created_at) VALUES ('ntf_4', 'a', 't', 'k1', '{}', 0, 0, 1)`)).toThrow(/UNIQUE/)
      db.exec(`DELETE FROM notifications WHERE id = 'ntf_1'`)
      expect(db.prepare(`SELECT count(*) FROM notification_clicks`).pluck().get()).toBe(0)
    } finally {
      db.close()
    }
  })

  it('schema.sql ends at the version the migrations reach', () => {
    expect(SCHEMA_VERSION).toBe(MIGRATIONS.length)
    expect(MIGRATIONS.every((m) => m.trim().length > 0)).toBe(true)
  })

  it('keeps data across an upgrade', () => {
    const t = tempDir()
    cleanup = t.cleanup
    const path = join(t.dir, 'data.db')
    const raw = new Database(path)
    raw.exec(MIGRATIONS[0]!)
    raw.pragma('user_version = 1')
    raw.prepare(`INSERT INTO events (id, type, body, created_at) VALUES ('evt_1', 't', '{}', 1)`).run()
    raw.close()
    const db = openDatabase(path)
    try {
      expect(db.prepare('SELECT id FROM events').pluck().all()).toEqual(['evt_1'])
    } finally {
      db.close()
    }
  })

  it('v3 → v4 keeps every delivery and its attempts, and the new unique indexes dedup as dedup_key did', () => {
    const t = tempDir()
    cleanup = t.cleanup
    const path = join(t.dir, 'v3.db')
    const raw = new Database(path)
    raw.pragma('foreign_keys = ON')
    for (const step of MIGRATIONS.slice(0, 3)) raw.exec(step)
    raw.pragma('user_version = 3')
    raw.exec(`INSERT INTO events (id, type, body, created_at) VALUES ('evt_1', 't', '{"a":1}', 1);
      INSERT INTO endpoints (id, url, secret, created_at, updated_at) VALUES ('ep_1', 'https://example.com', 's', 1, 1);
      INSERT INTO deliveries (id, channel, dedup_key, event_id, endpoint_id, event_type, status, attempts, max_attempts,
          next_attempt_at, last_status_code, created_at, updated_at, completed_at)
        VALUES ('dlv_1', 'webhook', 'evt_1:ep_1', 'evt_1', 'ep_1', 't', 'success', 2, 8, 5, 200, 1, 6, 6);
      INSERT INTO deliveries (id, channel, dedup_key, notification_id, recipient, event_type, payload, status, attempts,
          max_attempts, next_attempt_at, created_at, updated_at)
        VALUES ('dlv_2', 'inbox', 'ntf_1:u1:inbox', 'ntf_1', 'u1', 'topic', '{"p":1}', 'pending', 0, 3, 7, 2, 2);
      INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome, status_code)
        VALUES ('dlv_1', 1, 3, 4, 'retry', 500), ('dlv_1', 2, 5, 1, 'success', 200);`)
    const before = raw.prepare(`SELECT * FROM deliveries ORDER BY id`).all() as Record<string, unknown>[]
    raw.close()

    const db = openDatabase(path)
    try {
      expect(schemaVersion(db)).toBe(SCHEMA_VERSION)
      expect(db.pragma('foreign_keys', { simple: true })).toBe(1)
      const after = db.prepare(`SELECT * FROM deliveries ORDER BY id`).all()
      // Columns added since keep their defaults; an attempt logged as a row stays one (v12 reads both).
      const added = { app_id: 'default', target_key: null, success_started_at: null, success_duration_ms: null, success_body: null }
      expect(after).toEqual(before.map(({ dedup_key: _, ...rest }) => ({ ...rest, ...added })))
      expect(db.prepare(`SELECT delivery_id, attempt, outcome FROM attempts ORDER BY id`).raw().all()).toEqual([
        ['dlv_1', 1, 'retry'],
        ['dlv_1', 2, 'success'],
      ])
      const deliveries = createDeliveriesStore(db)
      const webhook = { channel: 'webhook' as const, eventId: 'evt_1', endpointId: 'ep_1', eventType: 't', maxAttempts: 8, nextAttemptAt: 9 }
      expect(deliveries.enqueue(webhook, 9)).toEqual({ id: 'dlv_1', created: false })
      const inbox = { channel: 'inbox' as const, notificationId: 'ntf_1', recipient: 'u1', eventType: 'topic', maxAttempts: 3, nextAttemptAt: 9 }
      expect(deliveries.enqueue(inbox, 9)).toEqual({ id: 'dlv_2', created: false })
      expect(deliveries.enqueue({ ...inbox, channel: 'email' }, 9).created).toBe(true)
      // Deleting a delivery still takes its attempts with it: the cascade survived the rebuild.
      db.prepare(`DELETE FROM deliveries WHERE id = 'dlv_1'`).run()
      expect(db.prepare(`SELECT count(*) FROM attempts`).pluck().get()).toBe(0)
    } finally {
      db.close()
    }
  })

  it('upgrades a v8 inbox to v9 with exact counts and the times of the states it had', () => {
    const t = tempDir()
    cleanup = t.cleanup
    const path = join(t.dir, 'v8.db')
    const raw = new Database(path)
    for (const step of MIGRATIONS.slice(0, 8)) raw.exec(step)
    raw.pragma('user_version = 8')
    raw.exec(`INSERT INTO inbox_messages (id, user_id, topic, title, seen, read, archived, created_at) VALUES
        ('msg_1', 'u1', 'a', 'x', 0, 0, 0, 10), ('msg_2', 'u1', 'a', 'x', 1, 1, 0, 20),
        ('msg_3', 'u1', 'b', 'x', 1, 0, 0, 30), ('msg_4', 'u1', 'b', 'x', 0, 0, 1, 40), ('msg_5', 'u2', 'a', 'x', 0, 0, 0, 50);
      INSERT INTO inbox_counters (user_id, unread_count, last_seq) VALUES ('u1', 2, 9), ('u2', 1, 3);`)
    raw.close()
    const db = openDatabase(path)
    try {
      expect(schemaVersion(db)).toBe(SCHEMA_VERSION)
      expect(db.prepare(`SELECT user_id, topic, tag, total, unread, unseen FROM inbox_counts ORDER BY 1, 2`).raw().all()).toEqual([
        ['u1', 'a', '', 2, 1, 1],
        ['u1', 'b', '', 1, 1, 0],
        ['u2', 'a', '', 1, 1, 1],
      ])
      expect(db.prepare(`SELECT id, seen_at, read_at, archived_at, app_id, tags FROM inbox_messages WHERE user_id = 'u1' ORDER BY id`).raw().all()).toEqual([
        ['msg_1', null, null, null, 'default', '[]'],
        ['msg_2', 20, 20, null, 'default', '[]'],
        ['msg_3', 30, null, null, 'default', '[]'],
        ['msg_4', null, null, 40, 'default', '[]'],
      ])
      // From here on the triggers keep them: unarchiving msg_4 counts it again.
      db.prepare(`UPDATE inbox_messages SET archived = 0, archived_at = NULL WHERE id = 'msg_4'`).run()
      expect(db.prepare(`SELECT unread_count FROM inbox_counters WHERE user_id = 'u1'`).pluck().get()).toBe(3)
      expect(db.prepare(`SELECT sum(total) FROM inbox_counts WHERE user_id = 'u1' AND tag = ''`).pluck().get()).toBe(4)
    } finally {
      db.close()
    }
  })

  it('v8 → v9 keeps queued rows under their keys and adds request rows keyed by origin', () => {
    const t = tempDir()
    cleanup = t.cleanup
    const path = join(t.dir, 'v8.db')
    const raw = new Database(path)
    raw.pragma('foreign_keys = ON')
    for (const step of MIGRATIONS.slice(0, 8)) raw.exec(step)
    raw.pragma('user_version = 8')
    raw.exec(`INSERT INTO events (id, type, body, created_at) VALUES ('evt_1', 't', '{}', 1);
      INSERT INTO endpoints (id, url, secret, created_at, updated_at) VALUES ('ep_1', 'https://example.com', 's', 1, 1);
      INSERT INTO deliveries (id, channel, event_id, endpoint_id, event_type, status, attempts, max_attempts, next_attempt_at, created_at, updated_at)
        VALUES ('dlv_1', 'webhook', 'evt_1', 'ep_1', 't', 'pending', 0, 8, 5, 1, 1);
      INSERT INTO deliveries (id, channel, notification_id, recipient, event_type, status, attempts, max_attempts, next_attempt_at, created_at, updated_at)
        VALUES ('dlv_2', 'email', 'ntf_1', 'u1', 'topic', 'pending', 0, 6, 5, 1, 1);`)
    raw.close()

    const db = openDatabase(path)
    try {
      expect(schemaVersion(db)).toBe(SCHEMA_VERSION)
      const deliveries = createDeliveriesStore(db)
      deliveries.enqueue({ channel: 'request', eventType: 'POST', targetKey: '@https://a.example', maxAttempts: 8, nextAttemptAt: 5 }, 5)
      const keys = db.prepare(`SELECT coalesce(endpoint_id, target_key, '#' || channel) FROM deliveries INDEXED BY deliveries_endpoint_due WHERE status = 'pending' ORDER BY 1`).pluck().all()
      expect(keys).toEqual(['#email', '@https://a.example', 'ep_1'])
      const claimed = deliveries.claimDue({ limit: 10, now: 10, defaultTimeoutMs: 1000, capacity: (k) => (k === 'ep_1' ? 0 : 1) })
      expect(claimed.map((c) => c.channel).sort()).toEqual(['email', 'request'])
    } finally {
      db.close()
    }
  })

  it('upgrades a v3 file that holds rows orphaned by hand (a step only refuses keys it breaks itself)', () => {
    const t = tempDir()
    cleanup = t.cleanup
    const path = join(t.dir, 'orphans.db')
    const raw = new Database(path)
    for (const step of MIGRATIONS.slice(0, 3)) raw.exec(step)
    raw.pragma('user_version = 3')
    // As the sqlite3 shell does by default (better-sqlite3 turns keys on).
    raw.pragma('foreign_keys = OFF')
    raw.exec(`INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome) VALUES ('dlv_gone', 1, 1, 1, 'retry')`)
    raw.close()
    const db = openDatabase(path)
    try {
      expect(schemaVersion(db)).toBe(SCHEMA_VERSION)
      expect(db.prepare(`SELECT delivery_id FROM attempts`).pluck().all()).toEqual(['dlv_gone'])
    } finally {
      db.close()
    }
  })

  it('refuses a database written by a newer Postbox', () => {
    const t = tempDir()
    cleanup = t.cleanup
    const path = join(t.dir, 'new.db')
    const raw = new Database(path)
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`)
    raw.close()
    expect(() => openDatabase(path)).toThrow(SchemaTooNewError)
    expect(() => openDatabase(path, { readonly: true })).toThrow(/newer than this Postbox supports/)
  })

  it('refuses to create a file from a schema.sql of another version (a mixed installation), leaving it empty', () => {
    const t = tempDir()
    cleanup = t.cleanup
    const raw = new Database(join(t.dir, 'mixed.db'))
    try {
      const older = readSchemaSql().replace(`PRAGMA user_version = ${SCHEMA_VERSION};`, `PRAGMA user_version = ${SCHEMA_VERSION - 1};`)
      expect(older).not.toBe(readSchemaSql())
      expect(() => migrate(raw, () => older)).toThrow(`schema.sql creates schema version ${SCHEMA_VERSION - 1} but this Postbox is built for ${SCHEMA_VERSION}`)
      expect(schemaVersion(raw)).toBe(0)
      expect(raw.prepare(`SELECT count(*) FROM sqlite_master`).pluck().get()).toBe(0)
      expect(migrate(raw)).toEqual({ from: 0, to: SCHEMA_VERSION })
    } finally {
      raw.close()
    }
  })
})
