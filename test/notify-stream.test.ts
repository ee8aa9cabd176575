import { afterEach, describe, expect, it } from 'vitest'
import { serve, type ServerType } from '@hono/node-server'
import type { AddressInfo } from 'node:net'
import { createApp } from '../src/api/app.js'
import { MAX_STREAMS_PER_USER } from '../src/api/inbox.js'
import { silentLogger } from '../src/log.js'
import type { WebhookService } from '../src/webhooks/types.js'
import Database from 'better-sqlite3'
import { join } from 'node:path'
import { MIGRATIONS } from '../src/store/sqlite/migrations.js'
import { openSqliteStore } from '../src/store/sqlite/index.js'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'
import { tempDir } from './helpers.js'
import { sseReader } from './support/sse.js'
import { TEST_BACKEND } from './support/backend.js'

const msgFor = (userId: string, deliveryId: string) => ({
  userId, notificationId: null, deliveryId, topic: 't', title: deliveryId, body: '', severity: 'info', actionUrl: null, payload: null,
})

let h: NotifyHarness
let server: ServerType | null = null
const aborts: AbortController[] = []
afterEach(async () => {
  for (const a of aborts.splice(0)) a.abort()
  if (server) await new Promise<void>((resolve) => server!.close(() => resolve()))
  server = null
  await h?.cleanup()
})

async function setup(deps: { streamMaxQueued?: number; streamKeepaliveMs?: number } = {}) {
  h = await notifyHarness({}, { streamKeepaliveMs: 50, ...deps })
  const app = createApp({ store: h.store, config: h.config, log: silentLogger(), clock: h.clock, webhooks: {} as WebhookService, notify: h.notify })
  server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' })
  await new Promise<void>((resolve) => server!.once('listening', () => resolve()))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const open = async (token: string, headers: Record<string, string> = {}, query = '') => {
    const ac = new AbortController()
    aborts.push(ac)
    const res = await fetch(`${base}/v1/inbox/stream?token=${token}${query}`, { headers, signal: ac.signal })
    return { res, sse: sseReader(res), close: () => ac.abort() }
  }
  const send = async (userId: string, title: string) => {
    await h.notify.notifications.send({ topic: 'chat', recipients: [userId], title })
    await h.drain()
  }
  return { open, send, base }
}

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5))
}

describe('inbox SSE stream (real HTTP server)', () => {
  it('pushes live events with per-user increasing ids, and keepalives', async () => {
    const { open, send } = await setup()
    const token = (await h.notify.tokens.issue('alice')).token
    await send('alice', 'before')
    const s = await open(token)
    expect(s.res.status).toBe(200)
    expect(s.res.headers.get('content-type')).toMatch(/^text\/event-stream/)
    await until(() => h.notify.stream.count('alice') === 1)
    await send('bob', 'not for alice')
    await send('alice', 'live one')
    const n = await s.sse.next()
    expect(n).toMatchObject({ id: '3', event: 'notification' })
    expect(JSON.parse(n.data!)).toMatchObject({ title: 'live one', read: false })
    expect(await s.sse.next()).toMatchObject({ id: '4', event: 'unread_count', data: JSON.stringify({ unread_count: 2 }) })
    const id = JSON.parse(n.data!).id as string
    await h.notify.inbox('alice').read([id])
    expect(await s.sse.next()).toMatchObject({ id: '5', event: 'state', data: JSON.stringify({ change: 'read', ids: [id] }) })
    expect(await s.sse.next()).toMatchObject({ id: '6', event: 'unread_count', data: JSON.stringify({ unread_count: 1 }) })
    expect(await s.sse.next((m) => m.comment === 'keepalive')).toMatchObject({ comment: 'keepalive' })
  })

  it('replays only what was missed after Last-Event-ID, then continues live', async () => {
    const { open, send } = await setup()
    const token = (await h.notify.tokens.issue('alice')).token
    const first = await open(token)
    await until(() => h.notify.stream.count('alice') === 1)
    await send('alice', 'one')
    expect(await first.sse.next()).toMatchObject({ id: '1', event: 'notification' })
    expect(await first.sse.next()).toMatchObject({ id: '2', event: 'unread_count' })
    first.close()
    await until(() => h.notify.stream.count('alice') === 0)
    expect(h.notify.stream.count('alice')).toBe(0) // the disconnect released the live subscription
    await send('alice', 'two')
    await h.notify.inbox('alice').readAll()
    const again = await open(token, { 'last-event-id': '2' })
    const replayed = [await again.sse.next(), await again.sse.next(), await again.sse.next(), await again.sse.next()]
    expect(replayed.map((m) => [m.id, m.event])).toEqual([
      ['3', 'notification'],
      ['4', 'unread_count'],
      ['5', 'state'],
      ['6', 'unread_count'],
    ])
    expect(JSON.parse(replayed[0]!.data!).title).toBe('two')
    await until(() => h.notify.stream.count('alice') === 1)
    await send('alice', 'three')
    expect(await again.sse.next()).toMatchObject({ id: '7', event: 'notification' })
    // ?since= does the same for clients that cannot set headers
    const viaQuery = await open(token, {}, '&since=6')
    expect(await viaQuery.sse.next()).toMatchObject({ id: '7', event: 'notification' })
  })

  it('a Last-Event-ID beyond the user\'s latest id (stale client, restored backup) still gets every new event', async () => {
    const { open, send } = await setup()
    const token = (await h.notify.tokens.issue('alice')).token
    await send('alice', 'old')
    const s = await open(token, { 'last-event-id': '500' })
    await until(() => h.notify.stream.count('alice') === 1)
    await send('alice', 'new')
    expect(await s.sse.next()).toMatchObject({ id: '3', event: 'notification' })
    expect(await s.sse.next()).toMatchObject({ id: '4', event: 'unread_count' })
  })

  it('ends an open stream once its token expires', async () => {
    const { open, send } = await setup()
    const token = (await h.notify.tokens.issue('alice', 60)).token
    const s = await open(token)
    await until(() => h.notify.stream.count('alice') === 1)
    await send('alice', 'while valid')
    expect(await s.sse.next()).toMatchObject({ id: '1', event: 'notification' })
    expect(await s.sse.next()).toMatchObject({ id: '2', event: 'unread_count' })
    h.clock.set(h.clock.now() + 61_000)
    await expect(s.sse.next()).rejects.toThrow('stream ended')
    await until(() => h.notify.stream.count('alice') === 0)
    expect(h.notify.stream.count('alice')).toBe(0)
  })

  it('sends no live event once the token has expired, even before the next keepalive', async () => {
    const { open } = await setup({ streamKeepaliveMs: 60_000 })
    const token = (await h.notify.tokens.issue('alice', 60)).token
    const s = await open(token)
    await until(() => h.notify.stream.count('alice') === 1)
    h.notify.stream.publish('alice', [{ seq: 1, kind: 'unread_count', data: { unread_count: 1 } }])
    expect(await s.sse.next()).toMatchObject({ id: '1' })
    h.clock.set(h.clock.now() + 60_000)
    h.notify.stream.publish('alice', [{ seq: 2, kind: 'unread_count', data: { unread_count: 2 } }])
    await expect(s.sse.next()).rejects.toThrow('stream ended')
  })

  it(`refuses a user's stream beyond ${MAX_STREAMS_PER_USER} open ones (429), not other users' streams`, async () => {
    const { open } = await setup()
    const token = (await h.notify.tokens.issue('alice')).token
    const streams = []
    for (let i = 0; i < MAX_STREAMS_PER_USER; i++) streams.push(await open(token))
    expect(streams.map((s) => s.res.status)).toEqual(Array(MAX_STREAMS_PER_USER).fill(200))
    await until(() => h.notify.stream.count('alice') === MAX_STREAMS_PER_USER)
    const extra = await open(token)
    expect(extra.res.status).toBe(429)
    expect((await open((await h.notify.tokens.issue('bob')).token)).res.status).toBe(200)
    // Closing one makes room again.
    streams[0]!.close()
    await until(() => h.notify.stream.count('alice') === MAX_STREAMS_PER_USER - 1)
    expect((await open(token)).res.status).toBe(200)
  })

  it('cuts off a client that lets more live events pile up than the stream may hold', async () => {
    const { open } = await setup({ streamMaxQueued: 3 })
    const token = (await h.notify.tokens.issue('alice')).token
    const s = await open(token)
    await until(() => h.notify.stream.count('alice') === 1)
    // Ten events in one turn: the stream cannot write any before the fourth arrives.
    h.notify.stream.publish('alice', Array.from({ length: 10 }, (_, i) => ({ seq: i + 1, kind: 'unread_count' as const, data: { unread_count: i } })))
    await expect(s.sse.next()).rejects.toThrow('stream ended')
    await until(() => h.notify.stream.count('alice') === 0)
    expect(h.notify.stream.count('alice')).toBe(0)
  })

  it('rejects a missing or foreign token', async () => {
    const { base } = await setup()
    expect((await fetch(`${base}/v1/inbox/stream`)).status).toBe(401)
    expect((await fetch(`${base}/v1/inbox/stream?token=pbu_x.y`)).status).toBe(401)
  })

  it('numbers a batch write per user in order, skipping repeated deliveries', async () => {
    h = await notifyHarness()
    const msg = (userId: string, deliveryId: string) => ({ userId, notificationId: null, deliveryId, topic: 't', title: deliveryId, body: '', severity: 'info', actionUrl: null, payload: null })
    await h.store.inbox.insertMessage(msg('u', 'd0'), 0)
    const out = await h.store.tx((s) => s.inbox.insertMessages([msg('u', 'd1'), msg('v', 'd2'), msg('u', 'd0'), msg('u', 'd3')], 0))
    expect(out.get('u')!.map((e) => [e.seq, e.kind, e.kind === 'notification' ? e.data.title : e.data.unread_count])).toEqual([
      [3, 'notification', 'd1'],
      [4, 'unread_count', 2],
      [5, 'notification', 'd3'],
      [6, 'unread_count', 3],
    ])
    expect(out.get('v')!.map((e) => e.seq)).toEqual([1, 2])
    expect((await h.notify.inbox('u').replay(2)).map((e) => e.seq)).toEqual([3, 4, 5, 6])
    expect(await h.notify.inbox('u').unreadCount()).toBe(3)
    expect((await h.notify.inbox('u').list()).data.map((m) => m.title)).toEqual(['d3', 'd1', 'd0'])
  })

  it('keeps only the last 1,000 events per user in the durable log', async () => {
    h = await notifyHarness()
    for (let i = 0; i < 510; i++) await h.store.inbox.insertMessage({ userId: 'u', notificationId: null, deliveryId: `d${i}`, topic: 't', title: 'x', body: '', severity: 'info', actionUrl: null, payload: null }, 0)
    const log = await h.notify.inbox('u').replay(0)
    expect(log).toHaveLength(1000)
    expect(log[0]!.seq).toBe(21)
    expect(log[999]!.seq).toBe(1020)
  })

  it('numbers a large batch (several insert statements) per user, and replays it from any event id', async () => {
    h = await notifyHarness()
    const users = ['a', 'b', 'c']
    const batch = Array.from({ length: 121 }, (_, i) => ({
      userId: users[i % 3]!, notificationId: null, deliveryId: `d${i}`, topic: 't', title: `m${i}`, body: '', severity: 'info', actionUrl: null, payload: { i },
    }))
    const out = await h.store.tx((s) => s.inbox.insertMessages(batch, 0))
    const a = out.get('a')!
    expect(a).toHaveLength(2 * 41)
    expect(a.map((e) => e.seq)).toEqual(Array.from({ length: 82 }, (_, k) => k + 1))
    expect(a.filter((e) => e.kind === 'unread_count').map((e) => e.data.unread_count)).toEqual(Array.from({ length: 41 }, (_, k) => k + 1))
    expect(a.filter((e) => e.kind === 'notification').map((e) => e.data.title)).toEqual(batch.filter((m) => m.userId === 'a').map((m) => m.title))
    expect(await Promise.all(users.map((u) => h.notify.inbox(u).unreadCount()))).toEqual([41, 40, 40])
    expect((await h.notify.inbox('b').list({ limit: 100 })).data).toHaveLength(40)
    // Replay is what the live stream sent, with each message's current state.
    const inbox = h.notify.inbox('a')
    expect((await inbox.replay(0)).map((e) => [e.seq, e.kind])).toEqual(a.map((e) => [e.seq, e.kind]))
    // After a notification event, the replay starts with that message's unread_count event.
    expect((await inbox.replay(5)).slice(0, 2)).toEqual([
      { seq: 6, kind: 'unread_count', data: { unread_count: 3 } },
      { seq: 7, kind: 'notification', data: expect.objectContaining({ title: 'm9', read: false }) },
    ])
    // Archived messages are replayed too, in the same order.
    const archived = a.filter((e) => e.kind === 'notification' && e.seq % 4 === 1).map((e) => e.data.id as string)
    expect((await inbox.archive(archived)).updated).toBe(21)
    const afterArchive = await inbox.replay(0)
    expect(afterArchive.slice(0, 82).map((e) => [e.seq, e.kind])).toEqual(a.map((e) => [e.seq, e.kind]))
    expect(afterArchive[0]!.data).toMatchObject({ title: 'm0', archived: true })
    expect(afterArchive.slice(82).map((e) => e.kind)).toEqual(['state', 'unread_count'])
    await inbox.unarchive(archived)
    await inbox.readAll()
    expect((await inbox.replay(80)).map((e) => [e.seq, e.kind])).toEqual([
      [81, 'notification'],
      [82, 'unread_count'],
      [83, 'state'],
      [84, 'unread_count'],
      [85, 'state'],
      [86, 'unread_count'],
      [87, 'state'],
      [88, 'unread_count'],
    ])
    expect((await inbox.replay(80))[0]!.data).toMatchObject({ title: 'm120', read: true })
    expect(await inbox.replay(88)).toEqual([])
  })

  it('lists and replays an inbox written by a v2 database after the migration', () => {
    const t = tempDir()
    const path = join(t.dir, 'v2.db')
    const raw = new Database(path)
    raw.exec(MIGRATIONS[0]!)
    raw.exec(MIGRATIONS[1]!)
    raw.pragma('user_version = 2')
    const insert = raw.prepare(`INSERT INTO inbox_messages (id, user_id, delivery_id, topic, title, created_at) VALUES (?, 'u', ?, 't', ?, 0)`)
    const log = raw.prepare(`INSERT INTO inbox_stream (user_id, seq, kind, data, created_at) VALUES ('u', ?, ?, ?, 0)`)
    for (const [i, id] of ['msg_a', 'msg_b', 'msg_c'].entries()) {
      insert.run(id, `d${i}`, id)
      log.run(2 * i + 1, 'notification', id)
      log.run(2 * i + 2, 'unread_count', JSON.stringify({ unread_count: i + 1 }))
    }
    raw.prepare(`INSERT INTO inbox_counters (user_id, unread_count, last_seq) VALUES ('u', 3, 6)`).run()
    raw.close()
    const store = openSqliteStore(path)
    try {
      expect(store.inbox.insertMessage(msgFor('u', 'd0'), 0).created).toBe(false)
      const { message } = store.inbox.insertMessage(msgFor('u', 'd3'), 0)
      const first = store.inbox.list('u', { status: 'all', archived: false, limit: 2 })
      const second = store.inbox.list('u', { status: 'all', archived: false, limit: 2, cursor: first.nextCursor })
      expect([...first.data, ...second.data].map((m) => m.id)).toEqual([message.id, 'msg_c', 'msg_b', 'msg_a'])
      expect(second.nextCursor).toBeNull()
      expect(store.inbox.unreadCount('u')).toBe(4)
      expect(store.inbox.replay('u', 0).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
      expect(store.inbox.replay('u', 6)).toEqual([
        { seq: 7, kind: 'notification', data: expect.objectContaining({ id: message.id, title: 'd3' }) },
        { seq: 8, kind: 'unread_count', data: { unread_count: 4 } },
      ])
    } finally {
      store.close()
      t.cleanup()
    }
  })

  // Rows as a v2 SQLite database wrote them: PostgreSQL databases start at the current schema.
  if (TEST_BACKEND === 'sqlite') it('replays log rows written before v3 together with the events of newer messages', async () => {
    h = await notifyHarness()
    const db = h.store.sqlite!.db
    // A message and its two log rows as a v2 database wrote them (no seq on the message).
    db.prepare(`INSERT INTO inbox_messages (id, user_id, topic, title, created_at) VALUES ('msg_old', 'u', 't', 'old', 0)`).run()
    // (The insert trigger of v9 has already counted its unread.)
    db.prepare(`UPDATE inbox_counters SET last_seq = 2 WHERE user_id = 'u'`).run()
    db.prepare(`INSERT INTO inbox_stream (user_id, seq, kind, data, created_at) VALUES ('u', 1, 'notification', 'msg_old', 0), ('u', 2, 'unread_count', '{"unread_count":1}', 0)`).run()
    await h.store.inbox.insertMessage({ userId: 'u', notificationId: null, deliveryId: 'd1', topic: 't', title: 'new', body: '', severity: 'info', actionUrl: null, payload: null }, 0)
    expect((await h.notify.inbox('u').replay(0)).map((e) => [e.seq, e.kind, e.kind === 'notification' ? e.data.title : e.data.unread_count])).toEqual([
      [1, 'notification', 'old'],
      [2, 'unread_count', 1],
      [3, 'notification', 'new'],
      [4, 'unread_count', 2],
    ])
  })
})
