import Database from 'better-sqlite3'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { Postbox } from '../src/postbox.js'
import { AppError } from '../src/errors.js'
import type { Store } from '../src/store/index.js'
import { createTransactionRunner, type Transaction } from '../src/transaction.js'
import { testConfig } from '../src/config.js'
import { silentLogger } from '../src/log.js'
import { systemClock } from '../src/lib/clock.js'
import { createInboxStreamHub } from '../src/notify/inbox-stream.js'
import type { RequestService } from '../src/webhooks/requests.js'
import { tempDir } from './helpers.js'
import { startReceiver, type Receiver } from './support/receiver.js'

/**
 * docs/outbox.md, SQLite library mode: `pb.transaction` commits the application's rows and Postbox's
 * sends together, rolls both back on a throw, and sends nothing before the commit.
 */

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.reverse()) await c()
  cleanups.length = 0
})

/** A started Postbox on a temp file with an endpoint to a real receiver, and the orders table. */
async function fixture(): Promise<{ pb: Postbox; rx: Receiver; path: string; count: (sql: string) => number }> {
  const t = tempDir('postbox-txn-')
  cleanups.push(t.cleanup)
  const rx = await startReceiver({ status: 200 })
  cleanups.push(() => rx.close())
  const path = join(t.dir, 'postbox.db')
  const pb = await Postbox.open({ db: path, allowNetworks: ['127.0.0.0/8'], bootstrapAdminKey: false })
  cleanups.push(() => pb.close())
  await pb.endpoints.create({ url: `${rx.url}/hooks` })
  await pb.transaction((tx) => tx.sql.run('CREATE TABLE orders (id TEXT PRIMARY KEY, total INTEGER NOT NULL)'))
  pb.start()
  // Another connection sees only what was committed.
  const count = (sql: string): number => {
    const c = new Database(path, { readonly: true })
    try {
      return Number(c.prepare(sql).pluck().get())
    } finally {
      c.close()
    }
  }
  return { pb, rx, path, count }
}

/** A few turns of the event loop: the dispatcher would have claimed anything it could see. */
const turns = async (n = 20): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
}

describe('pb.transaction (SQLite)', () => {
  it('commits the application row, the event, the notification and the request together, and sends only after the commit', async () => {
    const { pb, rx, count } = await fixture()
    const live: unknown[] = []
    pb.notify.stream.subscribe('ann', (e) => void live.push(e))
    const out = await pb.transaction(async (tx) => {
      await tx.sql.run('INSERT INTO orders (id, total) VALUES (?, ?)', 'o1', 42)
      const ev = await tx.events.send({ type: 'order.paid', data: { order: 'o1' } })
      const n = await tx.notifications.send({ topic: 'orders', recipients: ['ann'], title: 'paid' })
      const rq = await tx.requests.send({ url: `${rx.url}/requests`, body: { order: 'o1' } })
      expect(await tx.sql.get<{ total: number }>('SELECT total FROM orders WHERE id = ?', 'o1')).toEqual({ total: 42 })
      await turns()
      // Not committed: no other connection sees it, nothing went out, no live inbox event.
      expect(count(`SELECT count(*) FROM orders`)).toBe(0)
      expect(count(`SELECT count(*) FROM events`)).toBe(0)
      expect(rx.requests).toHaveLength(0)
      expect(live).toHaveLength(0)
      return { ev, n, rq }
    })
    expect(out.ev.id).toMatch(/^evt_/)
    expect(out.n.deliveries).toBe(1)
    // The message's stream events, published once the commit made them real.
    expect(live.length).toBeGreaterThan(0)
    await rx.waitFor(2, 10_000)
    expect(rx.requests.map((r) => r.path).sort()).toEqual(['/hooks', '/requests'])
    expect(JSON.parse(rx.requests.find((r) => r.path === '/hooks')!.body)).toMatchObject({ id: out.ev.id, data: { order: 'o1' } })
    expect(count(`SELECT count(*) FROM orders WHERE id = 'o1'`)).toBe(1)
    expect((await pb.inbox('ann').list()).data).toHaveLength(1)
  })

  it('a throw rolls back the application rows and every send: no trace, nothing sent', async () => {
    const { pb, rx, count } = await fixture()
    const live: unknown[] = []
    pb.notify.stream.subscribe('ann', (e) => void live.push(e))
    const boom = new Error('payment declined')
    await expect(
      pb.transaction(async (tx) => {
        await tx.sql.run('INSERT INTO orders (id, total) VALUES (?, ?)', 'o2', 7)
        await tx.events.send({ type: 'order.paid', data: { order: 'o2' } })
        await tx.notifications.send({ topic: 'orders', recipients: ['ann'], title: 'paid' })
        await tx.requests.send({ url: `${rx.url}/requests`, body: {} })
        throw boom
      }),
    ).rejects.toBe(boom)
    for (const table of ['orders', 'events', 'deliveries', 'attempts', 'notifications', 'inbox_messages', 'inbox_stream']) {
      expect(count(`SELECT count(*) FROM ${table}`), table).toBe(0)
    }
    expect(live).toHaveLength(0)
    // The next event is the first and only one the receiver ever gets.
    const next = await pb.events.send({ type: 'order.paid', data: { order: 'o3' } })
    await rx.waitFor(1, 10_000)
    await pb.close()
    expect(rx.requests.map((r) => (JSON.parse(r.body) as { id: string }).id)).toEqual([next.id])
  })

  it('bad input throws the usual AppError before the commit; caught, the rest still commits', async () => {
    const { pb, count } = await fixture()
    await expect(pb.transaction((tx) => tx.events.send({ type: '', data: {} }))).rejects.toMatchObject({ code: 'validation_failed' })
    const errs = await pb.transaction(async (tx) => {
      await tx.sql.run(`INSERT INTO orders VALUES ('o4', 1)`)
      const seen: string[] = []
      for (const bad of [() => tx.events.send({ type: 'x', data: 'no' as never }), () => tx.requests.send({ url: 'ftp://x' }), () => tx.notifications.send({ topic: 't', recipients: ['bad selector:'] })]) {
        await bad().catch((e: AppError) => seen.push(e.code))
      }
      await tx.events.send({ type: 'order.paid', data: {} })
      return seen
    })
    expect(errs).toEqual(['validation_failed', 'validation_failed', 'validation_failed'])
    expect(count(`SELECT count(*) FROM orders`)).toBe(1)
    expect(count(`SELECT count(*) FROM events`)).toBe(1)
  })

  it("sql refuses writes to Postbox's tables, schema changes naming them and transaction control; reads and the application's DDL pass", async () => {
    const { pb, path } = await fixture()
    const raw = new Database(path, { readonly: true })
    const postboxIndex = raw.prepare(`SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'deliveries' AND sql IS NOT NULL`).pluck().get() as string
    raw.close()
    const refused = [
      `INSERT INTO events (id, type, body, created_at) VALUES ('e', 't', '{}', 0)`,
      `UPDATE deliveries SET status = 'dead'`,
      `DELETE FROM deliveries`,
      `WITH x AS (SELECT 1) DELETE FROM attempts`,
      `DROP TABLE inbox_messages`,
      `CREATE INDEX mine ON events (type)`,
      `CREATE TRIGGER t AFTER INSERT ON orders BEGIN DELETE FROM deliveries; END`,
      `ALTER TABLE endpoints ADD COLUMN x TEXT`,
      `REPLACE INTO events (id, type, body, created_at) VALUES ('e', 't', '{}', 0)`,
      `UPDATE "Deliveries" SET status = 'dead'`,
      `DROP INDEX ${postboxIndex}`,
      `COMMIT`,
      `SAVEPOINT s`,
      `PRAGMA user_version = 1`,
    ]
    for (const sql of refused) {
      await expect(pb.transaction((tx) => tx.sql.run(sql)), sql).rejects.toMatchObject({ code: 'sql_refused' })
    }
    const n = await pb.transaction(async (tx) => {
      await tx.sql.run('CREATE TABLE IF NOT EXISTS lines (order_id TEXT REFERENCES orders (id), qty INTEGER)')
      await tx.sql.run('CREATE INDEX lines_order ON lines (order_id)')
      await tx.sql.run(`INSERT INTO orders VALUES ('o5', 3)`)
      await tx.sql.run(`INSERT INTO lines VALUES ('o5', 2)`)
      await tx.sql.run(`UPDATE orders SET total = total + 1 WHERE id = ?`, 'o5')
      return tx.sql.all<{ n: number }>(`SELECT (SELECT count(*) FROM events) + (SELECT total FROM orders) AS n`)
    })
    expect(n).toEqual([{ n: 4 }])
  })

  it('the context refuses calls after its transaction ended', async () => {
    const { pb } = await fixture()
    let kept: Transaction | null = null
    await pb.transaction(async (tx) => void (kept = tx))
    await expect(kept!.sql.get('SELECT 1')).rejects.toMatchObject({ code: 'transaction_ended' })
    await expect(kept!.events.send({ type: 'a', data: {} })).rejects.toMatchObject({ code: 'transaction_ended' })
  })

  it('calls left unawaited finish inside the transaction: committed with it, or rolled back with it', async () => {
    const { pb, count } = await fixture()
    const early: Promise<unknown>[] = []
    await expect(
      pb.transaction(async (tx) => {
        early.push(tx.sql.run(`INSERT INTO orders VALUES ('o7', 1)`), tx.events.send({ type: 'early', data: {} }))
        throw new Error('roll back')
      }),
    ).rejects.toThrow('roll back')
    await Promise.all(early)
    expect(count(`SELECT count(*) FROM orders`) + count(`SELECT count(*) FROM events`)).toBe(0)
    const late: Promise<unknown>[] = []
    await pb.transaction(async (tx) => void late.push(tx.sql.run(`INSERT INTO orders VALUES ('o8', 1)`), tx.events.send({ type: 'late', data: {} })))
    await Promise.all(late)
    expect(count(`SELECT count(*) FROM orders`) + count(`SELECT count(*) FROM events`)).toBe(2)
  })

  it('a call from outside waits for the transaction to end and does not join it', async () => {
    const { pb, count } = await fixture()
    const outside: Promise<unknown>[] = []
    await expect(
      pb.transaction(async (tx) => {
        await tx.sql.run(`INSERT INTO orders VALUES ('o6', 1)`)
        outside.push(pb.events.send({ type: 'outside', data: {} }))
        await turns()
        throw new Error('roll back')
      }),
    ).rejects.toThrow('roll back')
    await Promise.all(outside)
    expect(count(`SELECT count(*) FROM orders`)).toBe(0)
    expect(count(`SELECT count(*) FROM events WHERE type = 'outside'`)).toBe(1)
  })

  it('on PostgreSQL it throws, pointing at the SQL functions of docs/outbox.md', async () => {
    const run = createTransactionRunner({
      store: { backend: 'postgres', sqlite: undefined } as unknown as Store,
      config: testConfig(),
      clock: systemClock,
      log: silentLogger(),
      requests: {} as RequestService,
      hub: createInboxStreamHub(),
    })
    const err = await run(async () => 1).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(AppError)
    expect(err).toMatchObject({ code: 'unsupported_backend', message: expect.stringMatching(/postbox_send_event.*docs\/outbox\.md/) })
  })
})
