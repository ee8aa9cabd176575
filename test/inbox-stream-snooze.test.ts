import { afterEach, describe, expect, it } from 'vitest'
import { serve, type ServerType } from '@hono/node-server'
import type { AddressInfo } from 'node:net'
import { createApp } from '../src/api/app.js'
import { silentLogger } from '../src/log.js'
import type { WebhookService } from '../src/webhooks/types.js'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'
import { sseReader, type SseMessage } from './support/sse.js'

let h: NotifyHarness
let server: ServerType | null = null
const aborts: AbortController[] = []
afterEach(async () => {
  for (const a of aborts.splice(0)) a.abort()
  if (server) await new Promise<void>((resolve) => server!.close(() => resolve()))
  server = null
  await h?.cleanup()
})

async function setup() {
  h = await notifyHarness({}, { streamKeepaliveMs: 60_000 })
  const app = createApp({ store: h.store, config: h.config, log: silentLogger(), clock: h.clock, webhooks: {} as WebhookService, notify: h.notify })
  server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' })
  await new Promise<void>((resolve) => server!.once('listening', () => resolve()))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const open = async (token: string, headers: Record<string, string> = {}) => {
    const ac = new AbortController()
    aborts.push(ac)
    const res = await fetch(`${base}/v1/inbox/stream?token=${token}`, { headers, signal: ac.signal })
    return sseReader(res)
  }
  const post = async (path: string, token: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return (await res.json()) as Record<string, unknown>
  }
  return { open, post }
}

const json = (m: SseMessage) => JSON.parse(m.data!) as Record<string, unknown>

describe('inbox stream: snooze wake-ups and bulk changes', () => {
  it('pushes a woken message and a bulk change to every open tab, and replays both after Last-Event-ID', async () => {
    const { open, post } = await setup()
    const token = (await h.notify.tokens.issue('ann')).token
    await h.notify.notifications.send({ topic: 'chat', recipients: ['ann'], title: 'first', tags: ['social'] })
    await h.notify.notifications.send({ topic: 'chat', recipients: ['ann'], title: 'second', tags: ['billing'] })
    const [first] = (await h.notify.inbox('ann').list({ tags: ['social'] })).data
    const tab1 = await open(token)
    const tab2 = await open(token)
    // Both tabs are subscribed once each has its `connected` comment.
    await tab1.next((m) => m.comment === 'connected')
    await tab2.next((m) => m.comment === 'connected')
    const before = await h.notify.inbox('ann').lastSeq()

    // Snooze for 100 ms of the (manual) clock and move it on: the wake-up timer fires in real
    // time and finds the message due; nothing polls every row.
    await post('/v1/inbox/snooze', token, { ids: [first!.id], until: new Date(h.clock.now() + 100).toISOString() })
    h.clock.advance(100)
    for (const tab of [tab1, tab2]) {
      expect(json(await tab.next((m) => m.event === 'state'))).toMatchObject({ change: 'snooze', ids: [first!.id] })
      const woke = await tab.next((m) => m.event === 'notification')
      expect(json(woke)).toMatchObject({ id: first!.id, title: 'first', read: false, snoozed_until: null })
      expect(json(await tab.next((m) => m.event === 'unread_count'))).toEqual({ unread_count: 2 })
    }

    // A bulk change by filter: both tabs get the same state event and the new count.
    expect(await post('/v1/inbox/read-all', token, { tags: ['billing'] })).toEqual({ updated: 1 })
    for (const tab of [tab1, tab2]) {
      expect(json(await tab.next((m) => m.event === 'state'))).toEqual({
        change: 'read_all', filter: { topic: null, tags: ['billing'], app_id: null, read: null }, updated: 1,
      })
      expect(json(await tab.next((m) => m.event === 'unread_count'))).toEqual({ unread_count: 1 })
    }
    expect(await post('/v1/inbox/archive-all', token, {})).toEqual({ updated: 2 })

    // A third tab that missed all of it replays it in order.
    const late = await open(token, { 'last-event-id': String(before) })
    const replayed: [string, unknown][] = []
    for (let i = 0; i < 7; i++) {
      const m = await late.next()
      replayed.push([m.event!, m.event === 'state' ? json(m).change : m.event === 'notification' ? json(m).title : json(m).unread_count])
    }
    expect(replayed).toEqual([
      ['state', 'snooze'],
      ['unread_count', 1],
      ['notification', 'first'],
      ['unread_count', 2],
      ['state', 'read_all'],
      ['unread_count', 1],
      ['state', 'archive_all'],
    ])
  })

  it('an app-limited stream carries only its application, with its own unread count', async () => {
    const { open } = await setup()
    const scoped = (await h.notify.tokens.issue('ann', undefined, 'a1')).token
    const tab = await open(scoped)
    await tab.next((m) => m.comment === 'connected')
    await h.notify.notifications.send({ topic: 'chat', recipients: ['ann'], title: 'other app' })
    await h.notify.notifications.send({ topic: 'chat', recipients: ['ann'], title: 'mine', app_id: 'a1' })
    const n = await tab.next((m) => m.event === 'notification')
    expect(json(n)).toMatchObject({ title: 'mine', app_id: 'a1' })
    expect(json(await tab.next((m) => m.event === 'unread_count'))).toEqual({ unread_count: 1 })
  })
})
