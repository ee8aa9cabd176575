/**
 * The two backends of the directory, notification and inbox contract tests (src/store/pg/*.test.ts):
 * SQLite (a real file; the synchronous families lifted with liftSync) and PostgreSQL (a fresh
 * database on POSTBOX_TEST_PG_URL with DIRECTORY_DDL applied). Each gives the same Async families.
 */
import pg from 'pg'
import { createPgPool } from '../../src/store/pg/pool.js'
import { join } from 'node:path'
import { liftSync, type Async } from '../../src/store/contract.js'
import { openDatabase, type Db } from '../../src/store/sqlite/db.js'
import { createDirectoryStore } from '../../src/store/sqlite/directory.js'
import { type DirectoryStore } from '../../src/store/directory.js'
import { createNotificationsStore } from '../../src/store/sqlite/notifications.js'
import { type NotificationsStore } from '../../src/store/notifications.js'
import { createInboxStore } from '../../src/store/sqlite/inbox.js'
import { type InboxStore } from '../../src/store/inbox.js'
import { createReceiptsStore } from '../../src/store/sqlite/receipts.js'
import { type ReceiptsStore } from '../../src/store/receipts.js'
import { createUserListStore } from '../../src/store/sqlite/user-list.js'
import { type UserListStore } from '../../src/store/user-list.js'
import { DIRECTORY_DDL } from '../../src/store/pg/schema-directory.js'
import { createPgDirectoryStore } from '../../src/store/pg/directory.js'
import { createPgNotificationsStore } from '../../src/store/pg/notifications.js'
import { createPgInboxStore } from '../../src/store/pg/inbox.js'
import { createPgReceiptsStore } from '../../src/store/pg/receipts.js'
import { createPgUserListStore } from '../../src/store/pg/user-list.js'
import type { PgQueryable } from '../../src/store/pg/queryable.js'
import { freshPgDatabase, PG_URL } from './pg.js'
import { tempDir } from '../helpers.js'

/** The families under test, and what a test needs around them. */
export interface DirectoryBackend {
  readonly name: 'sqlite' | 'postgres'
  directory: Async<DirectoryStore>
  notifications: Async<NotificationsStore>
  inbox: Async<InboxStore>
  receipts: Async<ReceiptsStore>
  userList: Async<UserListStore>
  /** Adds a delivery row (the receipts and notification-list joins read it). */
  addDelivery(d: { id: string; notificationId: string; recipient: string; channel: string; status: string; completedAt?: number | null }): Promise<void>
  /** Runs SQL both dialects read alike (a retention-style delete, say). */
  exec(sql: string): Promise<void>
  /** Empties every table. */
  reset(): Promise<void>
  close(): Promise<void>
}

/**
 * The deliveries columns these families read, until schema-core's DDL is on this branch
 * (src/store/pg/schema-core.ts, another worktree): the PostgreSQL tests create only these.
 */
const DELIVERIES_STUB = `CREATE TABLE deliveries (
  id text COLLATE "C" PRIMARY KEY, channel text COLLATE "C" NOT NULL, notification_id text COLLATE "C", recipient text COLLATE "C",
  status text NOT NULL DEFAULT 'pending', last_error text, completed_at bigint)`

const TABLES = `users, user_groups, subscriptions, preferences, templates, notifications, notification_suppressions,
  notification_clicks, inbox_messages, inbox_counters, inbox_stream, inbox_counts, deliveries`

/** A pool whose int8 values are numbers, as every Postbox pool (createPgPool); connection errors of idle clients are ignored (the drop at the end ends them). */
export const numberPool = (url: string, max = 4): pg.Pool => createPgPool(url, { max })

/** The PostgreSQL families over `q` (the pool, or one node's pool on a shared database). */
export function pgFamilies(q: PgQueryable) {
  return {
    directory: createPgDirectoryStore(q),
    notifications: createPgNotificationsStore(q),
    inbox: createPgInboxStore(q),
    receipts: createPgReceiptsStore(q),
    userList: createPgUserListStore(q),
  }
}

/** Opens the SQLite backend on a new file. */
export async function openSqliteBackend(): Promise<DirectoryBackend> {
  let dir = tempDir()
  let db: Db
  const b = { name: 'sqlite' } as DirectoryBackend
  const open = () => {
    db = openDatabase(join(dir.dir, 'postbox.db'))
    Object.assign(b, {
      directory: liftSync(createDirectoryStore(db)),
      notifications: liftSync(createNotificationsStore(db)),
      inbox: liftSync(createInboxStore(db)),
      receipts: liftSync(createReceiptsStore(db)),
      userList: liftSync(createUserListStore(db)),
    })
  }
  open()
  b.addDelivery = async (d) => {
    const now = d.completedAt ?? 1
    db.prepare(
      `INSERT INTO deliveries (id, channel, notification_id, recipient, event_type, status, max_attempts, next_attempt_at, created_at, updated_at, completed_at)
       VALUES (?, ?, ?, ?, 't', ?, 8, 0, ?, ?, ?)`,
    ).run(d.id, d.channel, d.notificationId, d.recipient, d.status, now, now, d.completedAt ?? null)
  }
  b.exec = async (sql) => void db.exec(sql)
  b.reset = async () => {
    db.close()
    dir.cleanup()
    dir = tempDir()
    open()
  }
  b.close = async () => {
    db.close()
    dir.cleanup()
  }
  return b
}

/** Opens the PostgreSQL backend on a fresh database; `url` lets a test open more nodes on it. */
export async function openPgBackend(): Promise<DirectoryBackend & { url: string }> {
  const fresh = await freshPgDatabase()
  const pool = numberPool(fresh.url)
  await pool.query(DIRECTORY_DDL)
  await pool.query(DELIVERIES_STUB)
  return {
    name: 'postgres',
    url: fresh.url,
    ...pgFamilies(pool),
    async addDelivery(d) {
      await pool.query(`INSERT INTO deliveries (id, channel, notification_id, recipient, status, completed_at) VALUES ($1, $2, $3, $4, $5, $6)`, [
        d.id,
        d.channel,
        d.notificationId,
        d.recipient,
        d.status,
        d.completedAt ?? null,
      ])
    },
    async exec(sql) {
      await pool.query(sql)
    },
    async reset() {
      await pool.query(`TRUNCATE ${TABLES} RESTART IDENTITY`)
    },
    async close() {
      await pool.end()
      await fresh.drop()
    },
  }
}

/** The backends to run a contract suite on: SQLite always, PostgreSQL when the test server is there. */
export const BACKENDS: { name: 'sqlite' | 'postgres'; open: () => Promise<DirectoryBackend> }[] = [
  { name: 'sqlite', open: openSqliteBackend },
  ...(PG_URL ? [{ name: 'postgres' as const, open: openPgBackend }] : []),
]
