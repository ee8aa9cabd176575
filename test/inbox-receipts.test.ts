import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { SMTPServer } from 'smtp-server'
import type { AddressInfo } from 'node:net'
import type { Config } from '../src/config.js'
import { createApp } from '../src/api/app.js'
import { createApiKey } from '../src/api/auth.js'
import { silentLogger } from '../src/log.js'
import type { WebhookService } from '../src/webhooks/types.js'
import { signClickLink } from '../src/notify/click-links.js'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'

const raws: string[] = []
let smtp: SMTPServer
let smtpUrl: string

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, cb) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        raws.push(Buffer.concat(chunks).toString('utf8'))
        cb()
      })
    },
  })
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve))
  smtpUrl = `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => smtp.close(() => resolve())))

let h: NotifyHarness
afterEach(async () => {
  await h?.cleanup()
  raws.length = 0
})

async function setup(overrides: Partial<Config> = {}) {
  h = await notifyHarness(overrides)
  const app = createApp({ store: h.store, config: h.config, log: silentLogger(), clock: h.clock, webhooks: {} as WebhookService, notify: h.notify })
  const admin = (await createApiKey(h.store, { name: 'a', role: 'admin' }, h.clock.now())).key
  const call = async (method: string, path: string, token: string | null, body?: unknown) => {
    const headers: Record<string, string> = {}
    if (token) headers.authorization = `Bearer ${token}`
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await app.request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    return { status: res.status, body: (await res.json()) as Record<string, any> } // eslint-disable-line @typescript-eslint/no-explicit-any
  }
  const tokenFor = async (userId: string, appId?: string) =>
    (await call('POST', `/v1/users/${userId}/tokens`, admin, appId ? { app_id: appId } : {})).body.token as string
  return { app, admin, call, tokenFor }
}

const receiptOf = (receipts: { recipient: string; channel: string }[], recipient: string, channel: string) =>
  receipts.find((r) => r.recipient === recipient && r.channel === channel)

describe('inbox routes: tags, counts, snooze and bulk changes', () => {
  it('filters by tags and app, counts tabs exactly, and snoozes until a time', async () => {
    const { admin, call, tokenFor } = await setup()
    const send = (body: Record<string, unknown>) => call('POST', '/v1/notifications', admin, { topic: 'acct', recipients: ['ann'], ...body })
    await send({ title: 'invoice', tags: ['billing'], data: { amount: 3 } })
    await send({ title: 'like', tags: ['social'] })
    await send({ title: 'both', tags: ['billing', 'social'], topic: 'other' })
    await send({ title: 'elsewhere', app_id: 'a1', tags: ['billing'] })
    const ann = await tokenFor('ann')
    const list = await call('GET', '/v1/inbox?tags=billing', ann)
    expect(list.body.data.map((m: { title: string }) => m.title)).toEqual(['elsewhere', 'both', 'invoice'])
    expect(list.body.data[2]).toMatchObject({ tags: ['billing'], data: { amount: 3 }, body_format: 'text', app_id: 'default', read_at: null, snoozed_until: null })
    expect(list.body.data[2].notification_id).toMatch(/^ntf_/)
    expect((await call('GET', '/v1/inbox?app_id=a1', ann)).body.data.map((m: { title: string }) => m.title)).toEqual(['elsewhere'])
    expect((await call('GET', '/v1/inbox?tags=BAD!', ann)).status).toBe(400)

    const counts = await call('GET', '/v1/inbox/counts?tags=billing,social,ops', ann)
    expect(counts.body).toEqual({
      unread_count: 4,
      unseen_count: 4,
      total: 4,
      by_tag: {
        billing: { unread_count: 3, unseen_count: 3, total: 3 },
        social: { unread_count: 2, unseen_count: 2, total: 2 },
        ops: { unread_count: 0, unseen_count: 0, total: 0 },
      },
    })
    expect((await call('GET', '/v1/inbox/counts?topic=other&app_id=default', ann)).body).toMatchObject({ unread_count: 1, total: 1, by_tag: {} })

    // Bulk by filter: read everything tagged billing in the default app; archive only read ones.
    expect((await call('POST', '/v1/inbox/read-all', ann, { tags: ['billing'], app_id: 'default' })).body).toEqual({ updated: 2 })
    expect((await call('POST', '/v1/inbox/seen-all', ann, {})).body).toEqual({ updated: 2 })
    expect((await call('POST', '/v1/inbox/archive-all', ann, { read: true })).body).toEqual({ updated: 2 })
    expect((await call('GET', '/v1/inbox/counts?tags=billing', ann)).body).toMatchObject({ unread_count: 2, unseen_count: 0, total: 2, by_tag: { billing: { total: 1 } } })
    const archived = await call('GET', '/v1/inbox?archived=true', ann)
    expect(archived.body.data.every((m: { archived_at: string | null; read_at: string | null }) => m.archived_at !== null && m.read_at !== null)).toBe(true)

    // Snooze: hidden from lists and counts until the time, then back unread.
    const like = (await call('GET', '/v1/inbox?tags=social', ann)).body.data.find((m: { title: string }) => m.title === 'like')
    await call('POST', '/v1/inbox/read', ann, { ids: [like.id] })
    const until = new Date(h.clock.now() + 3_600_000).toISOString()
    expect((await call('POST', '/v1/inbox/snooze', ann, { ids: [like.id], until })).body).toEqual({ updated: 1 })
    expect((await call('GET', '/v1/inbox', ann)).body.data.map((m: { id: string }) => m.id)).not.toContain(like.id)
    expect((await call('GET', '/v1/inbox?snoozed=true', ann)).body.data).toMatchObject([{ id: like.id, snoozed_until: until }])
    expect((await call('GET', '/v1/inbox/counts', ann)).body.total).toBe(1)
    for (const bad of [new Date(h.clock.now() - 1).toISOString(), new Date(h.clock.now() + 91 * 86_400_000).toISOString(), 'tomorrow']) {
      expect((await call('POST', '/v1/inbox/snooze', ann, { ids: [like.id], until: bad })).body.error.code).toBe('validation_failed')
    }
    h.clock.advance(3_600_000)
    const back = await call('GET', '/v1/inbox', ann)
    expect(back.body.data.find((m: { id: string }) => m.id === like.id)).toMatchObject({ read: false, read_at: null, snoozed_until: null })
    expect(back.body.unread_count).toBe(2)

    // Click (also marks read) and unsnooze.
    expect((await call('POST', '/v1/inbox/clicked', ann, { ids: [like.id] })).body).toEqual({ updated: 1 })
    expect((await call('POST', '/v1/inbox/clicked', ann, { ids: [like.id] })).body).toEqual({ updated: 0 })
    await call('POST', '/v1/inbox/snooze', ann, { ids: [like.id], until: new Date(h.clock.now() + 60_000).toISOString() })
    expect((await call('POST', '/v1/inbox/unsnooze', ann, { ids: [like.id] })).body).toEqual({ updated: 1 })
    expect((await call('GET', '/v1/inbox', ann)).body.data.find((m: { id: string }) => m.id === like.id)).toMatchObject({ read: true, snoozed_until: null })
    expect((await call('GET', '/v1/inbox', ann)).body.data.find((m: { id: string }) => m.id === like.id).clicked_at).not.toBeNull()
  })

  it('confines an app-limited token to its application, and user A to their own messages', async () => {
    const { admin, call, tokenFor } = await setup()
    await call('POST', '/v1/notifications', admin, { topic: 'x', recipients: ['ann', 'bob'], title: 'default app' })
    await call('POST', '/v1/notifications', admin, { topic: 'x', recipients: ['ann', 'bob'], title: 'app one', app_id: 'a1' })
    expect((await call('POST', '/v1/notifications', admin, { topic: 'x', app_id: 'bad app!' })).status).toBe(400)
    const issued = await call('POST', '/v1/users/ann/tokens', admin, { app_id: 'a1' })
    expect(issued).toMatchObject({ status: 201, body: { app_id: 'a1' } })
    const annA1 = issued.body.token as string
    const ann = await tokenFor('ann')
    const bob = await tokenFor('bob')

    const scoped = await call('GET', '/v1/inbox', annA1)
    expect(scoped.body).toMatchObject({ unread_count: 1, data: [{ title: 'app one', app_id: 'a1' }] })
    expect(scoped.body.data).toHaveLength(1)
    // Another application answers as one that does not exist.
    for (const q of ['?app_id=default', '?app_id=no-such-app']) expect((await call('GET', `/v1/inbox${q}`, annA1)).status).toBe(404)
    expect((await call('GET', '/v1/inbox/counts?app_id=default', annA1)).status).toBe(404)
    expect((await call('POST', '/v1/inbox/read-all', annA1, { app_id: 'default' })).status).toBe(404)
    expect((await call('GET', '/v1/inbox/unread-count', annA1)).body).toEqual({ unread_count: 1 })
    expect((await call('GET', '/v1/inbox/counts', annA1)).body).toMatchObject({ total: 1 })

    const all = (await call('GET', '/v1/inbox', ann)).body.data as { id: string; app_id: string }[]
    const defaultId = all.find((m) => m.app_id === 'default')!.id
    // The scoped token cannot change the other app's message, nor bulk-change it.
    expect((await call('POST', '/v1/inbox/read', annA1, { ids: [defaultId] })).body).toEqual({ updated: 0 })
    expect((await call('POST', '/v1/inbox/archive-all', annA1, {})).body).toEqual({ updated: 1 })
    expect((await call('GET', '/v1/inbox', ann)).body.data).toMatchObject([{ id: defaultId, read: false }])

    // Bob's ids are not found for Ann, whatever the route.
    const bobIds = ((await call('GET', '/v1/inbox', bob)).body.data as { id: string }[]).map((m) => m.id)
    for (const op of ['read', 'seen', 'archive', 'clicked', 'unsnooze']) expect((await call('POST', `/v1/inbox/${op}`, ann, { ids: bobIds })).body).toEqual({ updated: 0 })
    expect((await call('POST', '/v1/inbox/snooze', ann, { ids: bobIds, until: new Date(h.clock.now() + 60_000).toISOString() })).body).toEqual({ updated: 0 })
    expect((await call('POST', '/v1/inbox/read-all', ann, {})).body).toEqual({ updated: 2 }) // read-all reaches archived messages too
    expect((await call('GET', '/v1/inbox/counts', bob)).body).toMatchObject({ unread_count: 2, total: 2 })
  })
})

describe("the operator's view", () => {
  it('lists every recipient with its status, reason and engagement times as they happen', async () => {
    const { admin, call, tokenFor } = await setup({ smtpUrl })
    await call('PUT', '/v1/users/ann', admin, { email: 'ann@example.com', name: 'Ann Lee', roles: ['ops'] })
    await call('PUT', '/v1/users/bob', admin, { email: 'bob@example.com', roles: ['ops'] })
    await call('PUT', '/v1/users/cy', admin, { roles: ['ops'], teams: ['red'] })
    await call('PUT', '/v1/users/dee', admin, { email: 'dee@example.com', teams: ['red'] })
    await call('PUT', '/v1/preferences', admin, { user_id: 'bob', topic: '*', channel: 'email', enabled: false })
    await call('PUT', '/v1/preferences', admin, { user_id: 'dee', topic: '*', channel: 'email', digest: 'daily' })
    const sent = await call('POST', '/v1/notifications', admin, { topic: 'deploy', recipients: ['role:ops', 'dee'], channels: ['inbox', 'email'], title: 'Deployed', tags: ['ops'] })
    await h.drain()
    const view = await call('GET', `/v1/notifications/${sent.body.id}`, admin)
    expect(view.body).toMatchObject({ app_id: 'default', tags: ['ops'], receipts_truncated: false })
    const r = view.body.receipts as Record<string, unknown>[] & { recipient: string; channel: string }[]
    expect(receiptOf(r, 'ann', 'email')).toMatchObject({ status: 'success', reason: null })
    expect(receiptOf(r, 'ann', 'email')!).toHaveProperty('delivered_at', expect.any(String))
    expect(receiptOf(r, 'bob', 'email')).toMatchObject({ status: 'suppressed', reason: 'preference_disabled', delivery_id: null })
    expect(receiptOf(r, 'cy', 'email')).toMatchObject({ status: 'suppressed', reason: 'no_address' })
    expect(receiptOf(r, 'dee', 'email')).toMatchObject({ status: 'suppressed', reason: 'digested' })
    expect(receiptOf(r, 'ann', 'inbox')).toMatchObject({ status: 'success', seen_at: null, read_at: null, clicked_at: null, archived_at: null })
    expect(r).toHaveLength(8)

    // Engagement shows up as it happens.
    const ann = await tokenFor('ann')
    const msg = (await call('GET', '/v1/inbox', ann)).body.data[0]
    h.clock.advance(1000)
    await call('POST', '/v1/inbox/seen', ann, { ids: [msg.id] })
    h.clock.advance(1000)
    await call('POST', '/v1/inbox/clicked', ann, { ids: [msg.id] })
    h.clock.advance(1000)
    await call('POST', '/v1/inbox/archive', ann, { ids: [msg.id] })
    const after = receiptOf((await call('GET', `/v1/notifications/${sent.body.id}`, admin)).body.receipts, 'ann', 'inbox') as Record<string, string>
    const t0 = h.clock.now() - 3000
    expect([after.seen_at, after.read_at, after.clicked_at, after.archived_at].map((t) => Date.parse(t!) - t0)).toEqual([1000, 2000, 2000, 3000])

    // Without SMTP configured, an email names that reason.
    const none = await notifyHarness()
    try {
      await none.notify.users.put('ann', { email: 'ann@example.com' })
      const n = await none.notify.notifications.send({ topic: 'x', recipients: ['ann'], channels: ['email'] })
      expect((await none.notify.notifications.get(n.id)).receipts).toMatchObject([{ recipient: 'ann', channel: 'email', status: 'suppressed', reason: 'channel_not_configured' }])
    } finally {
      await none.cleanup()
    }

    // The list: newest first, by topic, app, recipient and time, with a cursor.
    await call('POST', '/v1/notifications', admin, { topic: 'other', recipients: ['zed'], app_id: 'a1' })
    h.clock.advance(1000)
    const last = await call('POST', '/v1/notifications', admin, { topic: 'other', recipients: ['zed'] })
    const ids = async (q: string) => ((await call('GET', `/v1/notifications${q}`, admin)).body.data as { id: string }[]).map((n) => n.id)
    expect(await ids('?topic=deploy')).toEqual([sent.body.id])
    expect(await ids('?user_id=bob')).toEqual([sent.body.id])
    expect((await ids('?app_id=a1')).length).toBe(1)
    expect(await ids(`?since=${encodeURIComponent(new Date(h.clock.now()).toISOString())}`)).toEqual([last.body.id])
    expect(await ids(`?until=${encodeURIComponent(new Date(h.clock.now()).toISOString())}&topic=other`)).not.toContain(last.body.id)
    const page = await call('GET', '/v1/notifications?limit=1', admin)
    expect(page.body.data[0].id).toBe(last.body.id)
    expect(await ids(`?limit=5&cursor=${page.body.next_cursor}`)).not.toContain(last.body.id)
    expect((await call('GET', '/v1/notifications?cursor=bogus', admin)).status).toBe(400)

    // Users by role, team and substring.
    const users = async (q: string) => ((await call('GET', `/v1/users${q}`, admin)).body.data as { id: string }[]).map((u) => u.id).sort()
    expect(await users('?role=ops')).toEqual(['ann', 'bob', 'cy'])
    expect(await users('?team=red&role=ops')).toEqual(['cy'])
    expect(await users('?q=LEE')).toEqual(['ann'])
    expect(await users('?q=EXAMPLE.com')).toEqual(['ann', 'bob', 'dee'])
    const first = await call('GET', '/v1/users?limit=2', admin)
    expect(first.body.data).toHaveLength(2)
    const rest = await call('GET', `/v1/users?limit=10&cursor=${first.body.next_cursor}`, admin)
    expect([...first.body.data, ...rest.body.data].map((u: { id: string }) => u.id).sort()).toEqual(['ann', 'bob', 'cy', 'dee'])
  })
})

describe('click tracking', () => {
  it('rewrites email links, records the click and redirects only for a good link', async () => {
    const { app, admin, call } = await setup({ smtpUrl, trackClicks: true, publicUrl: 'http://pb.test' })
    await call('PUT', '/v1/users/ann', admin, { email: 'ann@example.com' })
    await call('PUT', '/v1/users/bob', admin, { email: 'bob@example.com' })
    const target = 'https://app.example.com/invoices/7?x=1&y=2'
    const sent = await call('POST', '/v1/notifications', admin, {
      topic: 'inv', recipients: ['ann'], channels: ['inbox', 'email'], title: 'Invoice', body: `Open ${target} now`, action_url: target,
    })
    await h.drain()
    expect(raws).toHaveLength(1)
    const body = raws[0]!.replace(/=\r?\n/g, '').replace(/=3D/g, '=')
    expect(body).not.toContain(target)
    const signed = /http:\/\/pb\.test\/c\/([A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43})/.exec(body)![1]!

    const follow = (s: string) => app.request(`/c/${s}`, { redirect: 'manual' })
    const ok = await follow(signed)
    expect(ok.status).toBe(302)
    expect(ok.headers.get('location')).toBe(target)
    const r = (await call('GET', `/v1/notifications/${sent.body.id}`, admin)).body.receipts
    expect(receiptOf(r, 'ann', 'email')).toHaveProperty('clicked_at', new Date(h.clock.now()).toISOString())
    expect(receiptOf(r, 'ann', 'inbox')).toHaveProperty('clicked_at', new Date(h.clock.now()).toISOString())

    // Tampered: a changed signature, a changed recipient under the old signature, garbage.
    const [claims, mac] = signed.split('.') as [string, string]
    const flipped = mac.slice(0, -1) + (mac.endsWith('A') ? 'B' : 'A')
    const swapped = Buffer.from(JSON.stringify([sent.body.id, 'bob']), 'utf8').toString('base64url')
    for (const bad of [`${claims}.${flipped}`, `${swapped}.${mac}`, 'nope', `${claims}`]) {
      const res = await follow(bad)
      expect(res.status).toBe(404)
      expect(res.headers.get('location')).toBeNull()
    }
    // Correctly signed but for a recipient who got no email of it.
    expect((await follow(signClickLink('test-token-key', { notificationId: sent.body.id, recipient: 'bob' }))).status).toBe(404)
    // A notification whose action_url is not http(s): no rewrite, and a signed link is refused.
    const rel = await call('POST', '/v1/notifications', admin, { topic: 'inv', recipients: ['ann'], channels: ['email'], title: 'Rel', body: 'see /inbox/1', action_url: '/inbox/1' })
    await h.drain()
    expect(raws[1]).not.toContain('/c/')
    expect((await follow(signClickLink('test-token-key', { notificationId: rel.body.id, recipient: 'ann' }))).status).toBe(404)
    expect((await follow(signClickLink('test-token-key', { notificationId: 'ntf_unknown', recipient: 'ann' }))).status).toBe(404)
  })

  it('redirects to the URL as parsed: non-ASCII and control characters are percent-encoded, never a 500', async () => {
    const { app, admin, call } = await setup({ smtpUrl, trackClicks: true, publicUrl: 'http://pb.test' })
    await call('PUT', '/v1/users/ann', admin, { email: 'ann@example.com' })
    const target = 'https://app.example.com/caf\u00e9/\u2603\u0001?q=\u00ff'
    const sent = await call('POST', '/v1/notifications', admin, { topic: 'inv', recipients: ['ann'], channels: ['email'], title: 'x', action_url: target })
    expect(sent.status).toBe(202)
    await h.drain()
    const res = await app.request(`/c/${signClickLink('test-token-key', { notificationId: sent.body.id, recipient: 'ann' })}`, { redirect: 'manual' })
    expect(res.status).toBe(302)
    expect(res.headers.get('location')).toBe(new URL(target).href)
    expect(res.headers.get('location')).toMatch(/^https:\/\/app\.example\.com\/[\x21-\x7e]*$/)
  })

  it('leaves links alone when tracking is off (the default)', async () => {
    const { admin, call } = await setup({ smtpUrl })
    await call('PUT', '/v1/users/ann', admin, { email: 'ann@example.com' })
    await call('POST', '/v1/notifications', admin, { topic: 'inv', recipients: ['ann'], channels: ['email'], title: 'x', body: 'Open https://app.example.com/a', action_url: 'https://app.example.com/a' })
    await h.drain()
    expect(raws[0]!.replace(/=\r?\n/g, '')).toContain('https://app.example.com/a')
  })
})
