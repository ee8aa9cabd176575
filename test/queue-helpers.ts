/**
 * Test support for the delivery queue: a real SQLite file in a temp dir with only the queue
 * store over it (no other table stores), plus plain-SQL endpoint fixtures.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase, type Db } from '../src/store/sqlite/db.js'
import { createDeliveriesStore } from '../src/store/sqlite/deliveries.js'
import type { DeliveriesStore, NewDelivery } from '../src/store/deliveries.js'

/** A queue over a temp database; `due` counts onDue calls; `cleanup` closes and deletes. */
export interface TestQueue {
  db: Db
  path: string
  deliveries: DeliveriesStore
  due: { count: number }
  cleanup: () => void
}

/** Opens a fresh queue database in a temporary directory. */
export function openTestQueue(): TestQueue {
  const dir = mkdtempSync(join(tmpdir(), 'postbox-queue-'))
  const path = join(dir, 'postbox.db')
  const db = openDatabase(path)
  const due = { count: 0 }
  return {
    db,
    path,
    deliveries: createDeliveriesStore(db, () => due.count++),
    due,
    cleanup: () => {
      if (db.open) db.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Endpoint columns a test may set; the rest take schema defaults. */
export interface EndpointFixture {
  id: string
  ordered?: boolean
  disabled?: boolean
  pausedUntil?: number | null
  deletedAt?: number | null
  timeoutMs?: number
}

/** Inserts an endpoint row with plain SQL. */
export function insertEndpoint(db: Db, e: EndpointFixture): void {
  db.prepare(
    `INSERT INTO endpoints (id, url, secret, ordered, disabled, paused_until, deleted_at, timeout_ms, created_at, updated_at)
     VALUES (?, 'https://example.com/hook', 'whsec_test', ?, ?, ?, ?, ?, 0, 0)`,
  ).run(e.id, e.ordered ? 1 : 0, e.disabled ? 1 : 0, e.pausedUntil ?? null, e.deletedAt ?? null, e.timeoutMs ?? 15_000)
}

/**
 * A due row, unique per `key`: the key is its recipient under one test notification (the
 * (notification, recipient, channel) unique index), so it needs no event row. Override any field.
 */
export function row(key: string, now: number, extra: Partial<NewDelivery> = {}): NewDelivery {
  return { channel: 'webhook', notificationId: 'ntf_test', recipient: key, eventType: 'test.event', maxAttempts: 8, nextAttemptAt: now, ...extra }
}
