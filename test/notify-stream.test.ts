import { afterEach, describe, expect, it } from 'vitest'
import { serve, type ServerType } from '@hono/node-server'
import type { AddressInfo } from 'node:net'
import { createApp } from '../src/api/app.js'
import { silentLogger } from '../src/log.js'
import type { WebhookService } from '../src/webhooks/types.js'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'

interface SseMessage {
  id?: string
  event?: string
  data?: string
  comment?: string
}

/** Reads SSE messages from a streaming fetch response. */
function sseReader(res: Response) {
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  const queue: SseMessage[] = []
  const parse = (block: string): SseMessage => {
    const msg: SseMessage = {}
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) msg.comment = line.slice(1).trim()
      const m = /^(id|event|data): ?(.*)$/.exec(line)
      if (m) msg[m[1] as 'id' | 'event' | 'data'] = m[2]
    }
    return msg
  }
  /** The next message matching `pred`, skipping others. */
  async function next(pred: (m: SseMessage) => boolean = (m) => m.id !== undefined): Promise<SseMessage> {
    for (;;) {
      const i = queue.findIndex(pred)
      if (i >= 0) return queue.splice(0, i + 1).pop()!
      queue.length = 0
      const { value, done } = await reader.read()
      if (done) throw new Error('stream ended')
      buffer += decoder.decode(value, { stream: true })
      let cut: number
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        queue.push(parse(buffer.slice(0, cut)))
        buffer = buffer.slice(cut + 2)
      }
    }
  }
  return { next, cancel: () => reader.cancel() }
}

let h: NotifyHarness
let server: ServerType | null = null
const aborts: AbortController[] = []
afterEach(async () => {
  for (const a of aborts.splice(0)) a.abort()
  if (server) await new Promise<void>((resolve) => server!.close(() => resolve()))
  server = null
  h?.cleanup()
})

async function setup() {
  h = notifyHarness({}, { streamKeepaliveMs: 50 })
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
    h.notify.notifications.send({ topic: 'chat', recipients: [userId], title })
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
    const token = h.notify.tokens.issue('alice').token
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
    h.notify.inbox('alice').read([id])
    expect(await s.sse.next()).toMatchObject({ id: '5', event: 'state', data: JSON.stringify({ change: 'read', ids: [id] }) })
    expect(await s.sse.next()).toMatchObject({ id: '6', event: 'unread_count', data: JSON.stringify({ unread_count: 1 }) })
    expect(await s.sse.next((m) => m.comment === 'keepalive')).toMatchObject({ comment: 'keepalive' })
  })

  it('replays only what was missed after Last-Event-ID, then continues live', async () => {
    const { open, send } = await setup()
    const token = h.notify.tokens.issue('alice').token
    const first = await open(token)
    await until(() => h.notify.stream.count('alice') === 1)
    await send('alice', 'one')
    expect(await first.sse.next()).toMatchObject({ id: '1', event: 'notification' })
    expect(await first.sse.next()).toMatchObject({ id: '2', event: 'unread_count' })
    first.close()
    await until(() => h.notify.stream.count('alice') === 0)
    expect(h.notify.stream.count('alice')).toBe(0) // the disconnect released the live subscription
    await send('alice', 'two')
    h.notify.inbox('alice').readAll()
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

  it('rejects a missing or foreign token', async () => {
    const { base } = await setup()
    expect((await fetch(`${base}/v1/inbox/stream`)).status).toBe(401)
    expect((await fetch(`${base}/v1/inbox/stream?token=pbu_x.y`)).status).toBe(401)
  })

  it('numbers a batch write per user in order, skipping repeated deliveries', () => {
    h = notifyHarness()
    const msg = (userId: string, deliveryId: string) => ({ userId, notificationId: null, deliveryId, topic: 't', title: deliveryId, body: '', severity: 'info', actionUrl: null, payload: null })
    h.store.inbox.insertMessage(msg('u', 'd0'), 0)
    const out = h.store.tx(() => h.store.inbox.insertMessages([msg('u', 'd1'), msg('v', 'd2'), msg('u', 'd0'), msg('u', 'd3')], 0))
    expect(out.get('u')!.map((e) => [e.seq, e.kind, e.kind === 'notification' ? e.data.title : e.data.unread_count])).toEqual([
      [3, 'notification', 'd1'],
      [4, 'unread_count', 2],
      [5, 'notification', 'd3'],
      [6, 'unread_count', 3],
    ])
    expect(out.get('v')!.map((e) => e.seq)).toEqual([1, 2])
    expect(h.notify.inbox('u').replay(2).map((e) => e.seq)).toEqual([3, 4, 5, 6])
    expect(h.notify.inbox('u').unreadCount()).toBe(3)
    expect(h.notify.inbox('u').list().data.map((m) => m.title)).toEqual(['d3', 'd1', 'd0'])
  })

  it('keeps only the last 1,000 events per user in the durable log', () => {
    h = notifyHarness()
    for (let i = 0; i < 510; i++) h.store.inbox.insertMessage({ userId: 'u', notificationId: null, deliveryId: `d${i}`, topic: 't', title: 'x', body: '', severity: 'info', actionUrl: null, payload: null }, 0)
    const log = h.notify.inbox('u').replay(0)
    expect(log).toHaveLength(1000)
    expect(log[0]!.seq).toBe(21)
    expect(log[999]!.seq).toBe(1020)
  })
})
