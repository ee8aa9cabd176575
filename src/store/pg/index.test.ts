import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freshPgDatabase, PG_URL } from '../../../test/support/pg.js'
import type { Store } from '../index.js'
import { openPgStore, type PgStore } from './index.js'
import { LISTENER_NAME } from './notify.js'

const event = (id: string) => ({ id, clientId: null, type: 't', orderingKey: null, body: '{}', createdAt: 1 })
const until = async (ok: () => boolean, ms = 5000): Promise<void> => {
  for (const end = Date.now() + ms; !ok(); ) {
    if (Date.now() > end) throw new Error('timed out')
    await new Promise((r) => setTimeout(r, 10))
  }
}

describe.runIf(PG_URL)('openPgStore', () => {
  let db: Awaited<ReturnType<typeof freshPgDatabase>>
  let a: PgStore
  let b: PgStore
  beforeAll(async () => {
    db = await freshPgDatabase()
    // Two nodes on one database.
    a = await openPgStore(db.url)
    b = await openPgStore(db.url)
  })
  afterAll(async () => {
    await a?.close()
    await b?.close()
    await db?.drop()
  })

  it('commits a transaction, rolls back one that throws, and a nested one alone as a savepoint', async () => {
    expect(await a.tx(async (s) => (await s.events.insert(event('evt_1')), 7))).toBe(7)
    expect(await b.events.get('evt_1')).not.toBeNull()
    await expect(a.tx(async (s) => {
      await s.events.insert(event('evt_2'))
      throw new Error('no')
    })).rejects.toThrow('no')
    expect(await b.events.get('evt_2')).toBeNull()
    await a.tx(async (s: Store) => {
      await s.events.insert(event('evt_3'))
      await expect(s.tx(async (n) => {
        await n.events.insert(event('evt_4'))
        throw new Error('inner')
      })).rejects.toThrow('inner')
    })
    expect(await b.events.get('evt_3')).not.toBeNull()
    expect(await b.events.get('evt_4')).toBeNull()
  })

  it('wakes this node after the commit and the other node through NOTIFY; a rollback wakes nobody', async () => {
    let [wokeA, wokeB] = [0, 0]
    const offA = a.onDue(() => wokeA++)
    const offB = b.onDue(() => wokeB++)
    try {
      const enqueue = (s: Store, id: string) =>
        s.events.insert(event(id)).then(() => s.deliveries.enqueue({ eventId: id, channel: 'email', recipient: 'u1', eventType: 't', nextAttemptAt: 0, maxAttempts: 1 }, 1))
      await expect(a.tx(async (s) => {
        await enqueue(s, 'evt_rb')
        throw new Error('rolled back')
      })).rejects.toThrow()
      await new Promise((r) => setTimeout(r, 100))
      expect([wokeA, wokeB]).toEqual([0, 0])
      await a.tx(async (s) => {
        await enqueue(s, 'evt_due')
        expect(wokeA).toBe(0)
      })
      expect(wokeA).toBeGreaterThanOrEqual(1)
      await until(() => wokeB >= 1)
    } finally {
      offA()
      offB()
    }
  })

  it('tells inbox listeners null and wakes the dispatcher after the listening connection came back, and is ready again', async () => {
    const notices: ({ userId: string; lastSeq: number } | null)[] = []
    const off = b.onInboxStream!((n) => notices.push(n))
    // Notifications sent while it was down are lost: the dispatcher is woken to read the database once.
    let woken = 0
    const offDue = b.onDue(() => woken++)
    try {
      await a.pool.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`, [LISTENER_NAME])
      await until(() => notices.includes(null), 10_000)
      await until(() => woken > 0, 10_000)
      await expect(b.stats.probeWritable()).resolves.toBeUndefined()
    } finally {
      off()
      offDue()
    }
  })

  it('answers again after every backend of its pool was terminated (the next statements open new connections)', async () => {
    await b.events.insert(event('evt_before_kill'))
    expect(b.pool.totalCount).toBeGreaterThan(0)
    await a.pool.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'postbox' AND datname = current_database() AND pid <> pg_backend_pid()`)
    // Each idle connection hears its termination and is dropped from the pool (its error is handled, not thrown).
    await until(() => b.pool.totalCount === 0, 10_000)
    expect(await b.events.get('evt_before_kill')).not.toBeNull()
    await b.tx((s) => s.events.insert(event('evt_after_kill')))
    expect(await a.events.get('evt_after_kill')).not.toBeNull()
  })
})
