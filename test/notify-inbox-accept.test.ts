import { afterEach, describe, expect, it } from 'vitest'
import { serve, type ServerType } from '@hono/node-server'
import type { AddressInfo } from 'node:net'
import { apiFixture, type ApiFixture } from './support/api.js'
import { encodePayload } from '../src/notify/delivery-payload.js'
import { newId } from '../src/lib/ids.js'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'
import { sseReader } from './support/sse.js'
import { runSql } from './support/backend.js'

// The inbox is written by the accept transaction of POST /v1/notifications (docs/notifications-basics.md: "written at
// once"): these tests never start the dispatcher unless they test the paths that still use it.

let f: ApiFixture | undefined
let server: ServerType | null = null
const aborts: AbortController[] = []
afterEach(async () => {
  for (const a of aborts.splice(0)) a.abort()
  if (server) await new Promise<void>((resolve) => server!.close(() => resolve()))
  server = null
  await f?.close()
  f = undefined
})

/** A real HTTP server over the fixture's app; returns its base URL. */
async function listen(fx: ApiFixture): Promise<string> {
  server = serve({ fetch: fx.pb.app.fetch, port: 0, hostname: '127.0.0.1' })
  await new Promise<void>((resolve) => server!.once('listening', () => resolve()))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** Opens a user's SSE stream and returns a reader of its id-carrying events. */
async function openStream(base: string, token: string) {
  const ac = new AbortController()
  aborts.push(ac)
  const res = await fetch(`${base}/v1/inbox/stream?token=${token}`, { signal: ac.signal })
  expect(res.status).toBe(200)
  return sseReader(res)
}

const waitFor = async (what: string, cond: () => boolean | Promise<boolean>): Promise<void> => {
  for (let i = 0; i < 400 && !(await cond()); i++) await new Promise((r) => setTimeout(r, 5))
  if (!(await cond())) throw new Error(`timed out waiting for ${what}`)
}

const inboxMetric = async (fx: ApiFixture): Promise<number> => {
  const text = await (await fx.call('GET', '/metrics', { key: fx.keys.viewer })).text()
  const m = /^postbox_deliveries_total\{channel="inbox",outcome="success"\} (\d+)$/m.exec(text)
  return m ? Number(m[1]) : 0
}

describe('inbox written by the accept transaction (real SQLite, real HTTP)', () => {
  it('answers 202 with every inbox row delivered, one attempt each, the messages and exact unread counts, no dispatcher', async () => {
    f = await apiFixture()
    for (const u of ['ann', 'bob']) expect((await f.call('PUT', `/v1/users/${u}`, { body: { roles: ['ops'] } })).status).toBe(201)
    const sent = await f.json('POST', '/v1/notifications', { key: f.keys.publisher, body: { topic: 'deploy.done', recipients: ['role:ops', 'user:zed'], title: 'Deployed', body: 'v2' } })
    expect(sent).toMatchObject({ status: 202, body: { deduplicated: false, recipients: 3, deliveries: 3 } })

    // The view, right after the POST: delivered, not pending.
    const view = (await f.json('GET', `/v1/notifications/${sent.body.id}`, { key: f.keys.viewer })).body
    expect(view.delivery_counts).toEqual({ pending: 0, in_flight: 0, success: 3, dead: 0, cancelled: 0 })
    expect(view.deliveries.map((d: Record<string, unknown>) => [d.recipient, d.channel, d.status, d.attempts, d.next_attempt_at, d.last_error])).toEqual([
      ['ann', 'inbox', 'success', 1, null, null],
      ['bob', 'inbox', 'success', 1, null, null],
      ['zed', 'inbox', 'success', 1, null, null],
    ])
    expect(view.deliveries.every((d: { completed_at: string | null }) => d.completed_at !== null)).toBe(true)
    const one = (await f.json('GET', `/v1/deliveries/${view.deliveries[0].id}`, { key: f.keys.viewer })).body
    expect(one).toMatchObject({ status: 'success', attempt_count: 1, last_status_code: null, completed_at: expect.any(String) })
    expect(one.attempts).toMatchObject([{ attempt: 1, outcome: 'success', status_code: null, error: null, response_body: null }])
    expect(await f.pb.store.deliveries.queueDepth()).toEqual({ pending: 0, in_flight: 0 })

    // The messages exist, each tied to its delivery, and the unread counts are exact.
    for (const [i, u] of ['ann', 'bob', 'zed'].entries()) {
      const token = (await f.json('POST', `/v1/users/${u}/tokens`, { body: {} })).body.token as string
      const inbox = (await f.json('GET', '/v1/inbox', { key: token })).body
      expect(inbox).toMatchObject({ unread_count: 1, data: [{ topic: 'deploy.done', title: 'Deployed', body: 'v2', read: false }] })
      const stored = (await f.pb.store.inbox.list(u, { status: 'all', archived: false, limit: 10 })).data
      expect(stored.map((m) => [m.deliveryId, m.notificationId])).toEqual([[view.deliveries[i].id, sent.body.id]])
    }
    // Counted in the same metric the dispatcher's attempts use.
    expect(await inboxMetric(f)).toBe(3)
  })

  it('pushes the messages to live SSE streams after commit; a dedup repeat writes and pushes nothing', async () => {
    f = await apiFixture()
    const base = await listen(f)
    const token = (await f.pb.tokens.issue('alice')).token
    const stream = await openStream(base, token)
    await waitFor('the stream to subscribe', () => f!.pb.notify.stream.count('alice') === 1)
    const post = (body: Record<string, unknown>) =>
      fetch(`${base}/v1/notifications`, { method: 'POST', headers: { authorization: `Bearer ${f!.keys.publisher}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    const first = await post({ topic: 'chat', recipients: ['alice'], title: 'hello', dedup_key: 'k1' })
    expect(first.status).toBe(202)
    const n = await stream.next()
    expect(n).toMatchObject({ id: '1', event: 'notification' })
    expect(JSON.parse(n.data!)).toMatchObject({ title: 'hello', read: false })
    expect(await stream.next()).toMatchObject({ id: '2', event: 'unread_count', data: JSON.stringify({ unread_count: 1 }) })

    const again = await post({ topic: 'chat', recipients: ['alice'], title: 'other', dedup_key: 'k1' })
    expect(await again.json()).toMatchObject({ deduplicated: true, deliveries: 1 })
    expect((await post({ topic: 'chat', recipients: ['alice'], title: 'second' })).status).toBe(202)
    // The next event ids follow on from 2: the repeat took none and pushed none.
    expect(await stream.next()).toMatchObject({ id: '3', event: 'notification', data: expect.stringContaining('"title":"second"') })
    expect(await stream.next()).toMatchObject({ id: '4', event: 'unread_count', data: JSON.stringify({ unread_count: 2 }) })
    expect((await f.pb.inbox('alice').list()).data.map((m) => m.title)).toEqual(['second', 'hello'])
    expect(await f.pb.inbox('alice').unreadCount()).toBe(2)
    expect(await inboxMetric(f)).toBe(2)
  })

  it('a failed accept transaction writes and pushes nothing; the same dedup_key then succeeds', async () => {
    f = await apiFixture()
    const pushed: unknown[] = []
    f.pb.notify.stream.subscribe('u1', (e) => pushed.push(e))
    // The last write of the transaction fails, after the messages and attempts were written.
    const sqlite = f.pb.store.backend === 'sqlite'
    if (sqlite) await runSql(f.pb.store, `CREATE TEMP TRIGGER fail_notification BEFORE INSERT ON notifications BEGIN SELECT RAISE(ABORT, 'disk trouble'); END`)
    else {
      await runSql(f.pb.store, `CREATE FUNCTION fail_notification() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk trouble'; END $$`)
      await runSql(f.pb.store, `CREATE TRIGGER fail_notification BEFORE INSERT ON notifications FOR EACH ROW EXECUTE FUNCTION fail_notification()`)
    }
    const failed = await f.call('POST', '/v1/notifications', { body: { topic: 't', recipients: ['u1', 'u2'], dedup_key: 'd' } })
    expect(failed.status).toBe(500)
    await runSql(f.pb.store, sqlite ? 'DROP TRIGGER fail_notification' : 'DROP TRIGGER fail_notification ON notifications')
    expect(await f.pb.inbox('u1').list()).toMatchObject({ unread_count: 0, data: [] })
    expect(await f.pb.inbox('u1').lastSeq()).toBe(0)
    expect(await f.pb.store.deliveries.countByStatus()).toEqual({ pending: 0, in_flight: 0, success: 0, dead: 0, cancelled: 0 })
    expect(await f.pb.store.notifications.byDedupKey('default', 'd')).toBeNull()
    expect(pushed).toEqual([])
    expect(await inboxMetric(f)).toBe(0)
    const ok = await f.json('POST', '/v1/notifications', { body: { topic: 't', recipients: ['u1', 'u2'], dedup_key: 'd' } })
    expect(ok.body).toMatchObject({ deduplicated: false, deliveries: 2 })
    expect(pushed).toHaveLength(2)
    expect([await f.pb.inbox('u1').unreadCount(), await f.pb.inbox('u2').unreadCount()]).toEqual([1, 1])
  })

  it('sends of one new dedup_key at once: one notification, every other answered as its repeat', async () => {
    f = await apiFixture()
    const sent = await Promise.all(Array.from({ length: 6 }, () => f!.json('POST', '/v1/notifications', { body: { topic: 't', recipients: ['u1'], dedup_key: 'race' } })))
    expect(sent.map((r) => r.status)).toEqual([202, 202, 202, 202, 202, 202])
    expect(new Set(sent.map((r) => r.body.id)).size).toBe(1)
    expect(sent.filter((r) => r.body.deduplicated === false)).toHaveLength(1)
    expect((await f.pb.inbox('u1').list()).data).toHaveLength(1)
  })

  it('library mode: send() returns with the inbox written and the view delivered', async () => {
    f = await apiFixture()
    const r = await f.pb.notifications.send({ topic: 'comment.created', recipients: ['user:u_1'], title: 'New comment' })
    expect(await f.pb.inbox('u_1').list()).toMatchObject({ unread_count: 1, data: [{ title: 'New comment' }] })
    const view = await f.pb.notifications.get(r.id) as { deliveries: { status: string; attempts: number }[] }
    expect(view.deliveries).toMatchObject([{ status: 'success', attempts: 1 }])
  })
})

describe('inbox rows the dispatcher still sends (same write function)', () => {
  it('a redelivered inbox delivery writes no second message and leaves the unread count and stream ids alone', async () => {
    f = await apiFixture()
    const sent = await f.pb.notifications.send({ topic: 't', recipients: ['u1'], title: 'once' })
    const [d] = await f.pb.store.deliveries.byNotification(sent.id)
    expect((await f.call('POST', `/v1/deliveries/${d!.id}/redeliver`)).status).toBe(202)
    expect(await f.pb.store.deliveries.get(d!.id)).toMatchObject({ status: 'pending', attempts: 0 })
    f.pb.start()
    await waitFor('the redelivery to settle', async () => (await f!.pb.store.deliveries.get(d!.id))!.status === 'success')
    expect((await f.pb.store.deliveries.attempts(d!.id)).map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'success'],
      [1, 'success'],
    ])
    expect(await f.pb.inbox('u1').list()).toMatchObject({ unread_count: 1, data: [{ title: 'once' }] })
    expect((await f.pb.inbox('u1').list()).data).toHaveLength(1)
    expect(await f.pb.inbox('u1').lastSeq()).toBe(2)
    expect(await inboxMetric(f)).toBe(2) // the accept's attempt and the redelivery's
  })

  it('a pending inbox row of an older version is written by the sender exactly as the accept transaction writes one', async () => {
    f = await apiFixture()
    const base = await listen(f)
    const stream = await openStream(base, (await f.pb.tokens.issue('old')).token)
    await waitFor('the stream to subscribe', () => f!.pb.notify.stream.count('old') === 1)
    const content = { title: 'Hi', body: 'b', severity: 'warning' as const, action_url: '/x', payload: { n: 1 } }
    // As versions before this one enqueued it: pending, for the dispatcher.
    const ntf = newId('ntf')
    const now = Date.now()
    const legacy = await f.pb.store.tx((s) =>
      s.deliveries.enqueue(
        {
          channel: 'inbox', notificationId: ntf, recipient: 'old', eventType: 'legacy.topic', maxAttempts: 6, nextAttemptAt: now,
          payload: encodePayload({ ...content, format: 'text', recipient: { email: null, name: null, locale: null, external: false } }),
        },
        now,
      ),
    )
    f.pb.start()
    const n = await stream.next()
    expect(n).toMatchObject({ id: '1', event: 'notification', data: expect.stringContaining('"title":"Hi"') })
    await waitFor('the legacy row to settle', async () => (await f!.pb.store.deliveries.get(legacy.id))!.status === 'success')
    // The same notification content sent now: written at accept.
    const sent = await f.pb.notifications.send({ topic: 'legacy.topic', recipients: ['old'], ...content })
    const fresh = (await f.pb.store.deliveries.byNotification(sent.id))[0]!
    const [a, b] = [(await f.pb.store.deliveries.get(legacy.id))!, (await f.pb.store.deliveries.get(fresh.id))!]
    const shape = (d: typeof a) => [d.channel, d.status, d.attempts, d.claimToken, d.leaseUntil, d.lastStatusCode, d.lastError, d.completedAt !== null, d.payload]
    expect(shape(b)).toEqual(shape(a))
    const attempt = async (id: string) => (await f!.pb.store.deliveries.attempts(id)).map((x) => [x.attempt, x.outcome, x.statusCode, x.error, x.responseBody])
    expect(await attempt(fresh.id)).toEqual(await attempt(legacy.id))
    const messages = (await f.pb.store.inbox.list('old', { status: 'all', archived: false, limit: 10 })).data
    const content2 = (m: (typeof messages)[number]) => [m.topic, m.title, m.body, m.severity, m.actionUrl, m.payload, m.read, m.seen]
    expect(messages.map((m) => m.deliveryId)).toEqual([fresh.id, legacy.id])
    expect(content2(messages[0]!)).toEqual(content2(messages[1]!))
    expect(await f.pb.inbox('old').unreadCount()).toBe(2)
  })
})

describe('pipeline rules with the inbox written at accept (manual clock)', () => {
  let h: NotifyHarness | undefined
  afterEach(async () => {
    await h?.cleanup()
    h = undefined
  })
  const rows = async (hh: NotifyHarness, id: string) =>
    (await hh.store.deliveries.byNotification(id)).map((d) => [d.recipient, d.channel, d.status, d.attempts, d.nextAttemptAt])

  it('preferences that mute the inbox create no row, message, counter or attempt; mandatory topics still write it', async () => {
    h = await notifyHarness({ mandatoryTopics: ['security.'] })
    await h.notify.preferences.put({ user_id: 'u1', topic: '*', channel: 'inbox', enabled: false })
    const muted = await h.notify.notifications.send({ topic: 'billing.paid', recipients: ['u1', 'u2'] })
    expect(muted.deliveries).toBe(1)
    expect((await rows(h, muted.id)).map((r) => r[0])).toEqual(['u2'])
    expect(await h.notify.inbox('u1').list()).toMatchObject({ unread_count: 0, data: [] })
    expect(await h.notify.inbox('u1').lastSeq()).toBe(0)
    const now = h.clock.now()
    const forced = await h.notify.notifications.send({ topic: 'security.login', recipients: ['u1'] })
    expect(await rows(h, forced.id)).toEqual([['u1', 'inbox', 'success', 1, now]])
    expect(await h.notify.inbox('u1').list()).toMatchObject({ unread_count: 1, data: [{ topic: 'security.login' }] })
  })

  it('quiet hours hold email and webhook but not the inbox, which is delivered at once; views stay in recipient order', async () => {
    h = await notifyHarness()
    h.clock.set(Date.parse('2026-01-15T22:30:00Z')) // 23:30 in Paris
    await h.notify.users.put('u1', { email: 'u1@example.com' })
    await h.notify.preferences.put({ user_id: 'u1', topic: '*', channel: '*', quiet_hours: { tz: 'Europe/Paris', start: '22:00', end: '07:00' } })
    const now = h.clock.now()
    const end = Date.parse('2026-01-16T06:00:00Z')
    const r = await h.notify.notifications.send({ topic: 't', recipients: ['u1', 'u2', 'ext@example.org'], channels: ['inbox', 'email', 'webhook'] })
    expect(await rows(h, r.id)).toEqual([
      ['u1', 'inbox', 'success', 1, now],
      ['u1', 'email', 'pending', 0, end],
      ['u1', 'notify-webhook', 'pending', 0, end],
      ['u2', 'inbox', 'success', 1, now],
      ['u2', 'email', 'pending', 0, now],
      ['u2', 'notify-webhook', 'pending', 0, now],
      ['ext@example.org', 'email', 'pending', 0, now],
    ])
    expect(r.deliveries).toBe(7)
    expect(await h.notify.inbox('u1').unreadCount()).toBe(1)
    expect((await h.notify.inbox('ext@example.org').list()).data).toEqual([])
    const view = await h.notify.notifications.get(r.id) as { delivery_counts: Record<string, number> }
    expect(view.delivery_counts).toMatchObject({ success: 2, pending: 5 })
  })

  it('counts one observed attempt per inbox row written at accept, none for a dedup repeat', async () => {
    const seen: [string, string][] = []
    h = await notifyHarness({}, { observer: { attempt: (channel, outcome) => void seen.push([channel, outcome]) } })
    await h.notify.notifications.send({ topic: 't', recipients: ['a', 'b'], channels: ['inbox', 'email'], dedup_key: 'x' })
    await h.notify.notifications.send({ topic: 't', recipients: ['a', 'b'], dedup_key: 'x' })
    expect(seen).toEqual([
      ['inbox', 'success'],
      ['inbox', 'success'],
    ])
  })
})
