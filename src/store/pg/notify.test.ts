import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type pg from 'pg'
import { PG_URL, freshPgDatabase } from '../../../test/support/pg.js'
import { LISTENER_NAME, createPgNotifier, type PgNotifier } from './notify.js'
import { createPgPool, withPgTransaction } from './pool.js'
import type { PgQueryable } from './queryable.js'

/** Sends a notification on `q` (a transaction's connection: delivered at its commit). */
async function pgNotify(q: PgQueryable, channel: string, payload = ''): Promise<void> {
  await q.query(`SELECT pg_notify($1, $2)`, [channel, payload])
}

/** Resolves with the next `n` payloads a listener receives. */
function collect(notifier: PgNotifier, channel: string): { got: (string | null)[]; next: (n: number) => Promise<(string | null)[]>; stop: () => void } {
  const got: (string | null)[] = []
  let waiter: (() => void) | null = null
  const stop = notifier.on(channel, (p) => {
    got.push(p)
    waiter?.()
  })
  return {
    got,
    stop,
    async next(n) {
      const deadline = Date.now() + 10_000
      while (got.length < n && Date.now() < deadline) await new Promise<void>((r) => ((waiter = r), setTimeout(r, 200)))
      return got.splice(0, n)
    },
  }
}

describe.runIf(PG_URL)('LISTEN/NOTIFY between nodes', () => {
  let db: { url: string; drop: () => Promise<void> }
  let nodeA: pg.Pool
  let nodeB: pg.Pool
  beforeAll(async () => {
    db = await freshPgDatabase()
    nodeA = createPgPool(db.url, { max: 2 })
    nodeB = createPgPool(db.url, { max: 2 })
  })
  afterAll(async () => {
    await nodeA?.end()
    await nodeB?.end()
    await db?.drop()
  })

  it('delivers a notification to another node at commit, and never one of a rolled-back transaction', async () => {
    const b = createPgNotifier(nodeB)
    const heard = collect(b, 'postbox_due')
    await b.ready()
    await withPgTransaction(nodeA, async (q) => {
      await pgNotify(q, 'postbox_due', 'rolled-back')
      throw new Error('abort')
    }).catch(() => {})
    await withPgTransaction(nodeA, (q) => pgNotify(q, 'postbox_due', 'committed'))
    expect(await heard.next(1)).toEqual(['committed'])
    // Other channels are not heard; a stopped listener hears nothing more.
    await pgNotify(nodeA, 'postbox_other', 'x')
    heard.stop()
    await pgNotify(nodeA, 'postbox_due', 'after-stop')
    await new Promise((r) => setTimeout(r, 200))
    expect(heard.got).toEqual([])
    await b.close()
  })

  it('reconnects after its connection is killed, telling listeners they may have missed notifications', async () => {
    const errors: Error[] = []
    const b = createPgNotifier(nodeB, { backoff: { baseMs: 50, maxMs: 50 }, onError: (e) => errors.push(e) })
    const heard = collect(b, 'postbox_due')
    await b.ready()
    await pgNotify(nodeA, 'postbox_due', 'one')
    expect(await heard.next(1)).toEqual(['one'])
    await nodeA.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, [LISTENER_NAME])
    expect(await heard.next(1)).toEqual([null])
    await b.ready()
    expect(b.listening()).toBe(true)
    await pgNotify(nodeA, 'postbox_due', 'two')
    expect(await heard.next(1)).toEqual(['two'])
    expect(errors.length).toBeGreaterThan(0)
    await b.close()
    expect(b.listening()).toBe(false)
  })

  it('closes cleanly while the LISTEN of a new channel is still in flight', async () => {
    const b = createPgNotifier(nodeB)
    b.on('postbox_due', () => {})
    await b.ready()
    // The LISTEN of this second channel fails when close ends the connection under it; that
    // failure must not reach a connection that is already gone (an unhandled rejection).
    b.on('postbox_late', () => {})
    await b.close()
    await new Promise((r) => setTimeout(r, 100))
    await expect(b.ready()).resolves.toBeUndefined()
  })

  it('refuses a channel name it would have to quote', () => {
    const b = createPgNotifier(nodeB)
    expect(() => b.on('due; DROP TABLE x', () => {})).toThrow(/not a channel name/)
    return b.close()
  })
})
