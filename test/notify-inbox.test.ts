import { afterEach, describe, expect, it } from 'vitest'
import { createApp } from '../src/api/app.js'
import { createApiKey } from '../src/auth/keys.js'
import { silentLogger } from '../src/log.js'
import type { WebhookService } from '../src/webhooks/types.js'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'

let h: NotifyHarness
afterEach(() => h?.cleanup())

/** The real app over the harness (webhooks are not used by these routes). */
async function setup() {
  h = await notifyHarness()
  const app = createApp({ store: h.store, config: h.config, log: silentLogger(), clock: h.clock, webhooks: {} as WebhookService, notify: h.notify })
  const admin = (await createApiKey(h.store, { name: 'a', role: 'admin' }, h.clock.now())).key
  const viewer = (await createApiKey(h.store, { name: 'v', role: 'viewer' }, h.clock.now())).key
  const publisher = (await createApiKey(h.store, { name: 'p', role: 'publisher' }, h.clock.now())).key
  const call = async (method: string, path: string, token: string | null, body?: unknown) => {
    const headers: Record<string, string> = {}
    if (token) headers.authorization = `Bearer ${token}`
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await app.request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    return { status: res.status, body: (await res.json()) as Record<string, any> } // eslint-disable-line @typescript-eslint/no-explicit-any
  }
  const tokenFor = async (userId: string) => (await call('POST', `/v1/users/${userId}/tokens`, admin, {})).body.token as string
  return { app, admin, viewer, publisher, call, tokenFor }
}

describe('directory and notification routes', () => {
  it('enforces roles and validates input', async () => {
    const { admin, viewer, publisher, call } = await setup()
    expect((await call('PUT', '/v1/users/u1', admin, { email: 'ann@example.com', roles: ['ops'], timezone: 'Europe/Paris' })).status).toBe(201)
    expect((await call('PUT', '/v1/users/u1', admin, { name: 'Ann' })).body).toMatchObject({ id: 'u1', name: 'Ann', email: 'ann@example.com', roles: ['ops'] })
    expect((await call('PUT', '/v1/users/u2', viewer, {})).status).toBe(403)
    expect((await call('GET', '/v1/users/u1', viewer)).status).toBe(200)
    expect((await call('PUT', '/v1/users/u3', admin, { timezone: 'Mars/Base' })).body.error.code).toBe('validation_failed')
    const sent = await call('POST', '/v1/notifications', publisher, { topic: 'deploy.done', recipients: ['role:ops'] })
    expect(sent).toMatchObject({ status: 202, body: { deduplicated: false, recipients: 1, deliveries: 1 } })
    expect((await call('GET', `/v1/notifications/${sent.body.id}`, viewer)).body.deliveries).toMatchObject([{ recipient: 'u1', channel: 'inbox', status: 'success', attempts: 1 }])
    expect((await call('GET', '/v1/notifications/ntf_nope', viewer)).status).toBe(404)
    expect((await call('POST', '/v1/notifications', publisher, { topic: 'Bad Topic' })).status).toBe(400)
    expect((await call('PUT', '/v1/subscriptions', publisher, { topic: 'x', principal: 'role:ops' })).status).toBe(403)
    expect((await call('PUT', '/v1/subscriptions', admin, { topic: 'x', principal: 'role:ops' })).status).toBe(200)
    expect((await call('GET', '/v1/subscriptions?topic=x', viewer)).body.data).toMatchObject([{ topic: 'x', principal: 'role:ops', enabled: true }])
    expect((await call('DELETE', '/v1/subscriptions', admin, { topic: 'x', principal: 'role:ops' })).body).toEqual({ deleted: true })
    expect((await call('PUT', '/v1/preferences', admin, { user_id: 'u1', topic: '*', channel: 'email', digest: 'daily' })).status).toBe(200)
    expect((await call('GET', '/v1/users/u1/preferences', viewer)).body.data).toMatchObject([{ channel: 'email', digest: 'daily', enabled: true }])
    expect((await call('PUT', '/v1/templates', admin, { topic: 'x', channel: 'email', subject: 's' })).body).toMatchObject({ version: 1, locale: 'en' })
    expect((await call('PUT', '/v1/templates', admin, { topic: 'x', channel: 'email', subject: 's2' })).body.version).toBe(2)
    expect((await call('GET', '/v1/templates', viewer)).body.data).toHaveLength(2)
    const bad = await call('PUT', '/v1/templates', admin, { topic: 'x', channel: 'email', body: '{% if %}' })
    expect(bad).toMatchObject({ status: 400, body: { error: { code: 'validation_failed', details: [{ field: 'body' }] } } })
    expect((await call('DELETE', '/v1/users/u1', admin)).body).toEqual({ deleted: true })
    expect((await call('GET', '/v1/users/u1', admin)).status).toBe(404)
  })
})

describe('end-user inbox', () => {
  it('needs a valid user token, and never shows or changes another user’s messages', async () => {
    const { call, tokenFor, admin } = await setup()
    await h.notify.notifications.send({ topic: 'a', recipients: ['alice'], title: 'for alice' })
    await h.notify.notifications.send({ topic: 'b', recipients: ['bob'], title: 'for bob' })
    await h.drain()
    const alice = await tokenFor('alice')
    const bob = await tokenFor('bob')
    expect((await call('GET', '/v1/inbox', null)).status).toBe(401)
    expect((await call('GET', '/v1/inbox', admin)).body.error.code).toBe('invalid_token')
    expect((await call('GET', '/v1/inbox', alice.slice(0, -2) + 'xx')).status).toBe(401)
    const a = await call('GET', '/v1/inbox', alice)
    expect(a.body).toMatchObject({ unread_count: 1, next_cursor: null, data: [{ title: 'for alice', read: false, seen: false, archived: false }] })
    expect(Object.keys(a.body.data[0]).sort()).toEqual([
      'action_url', 'app_id', 'archived', 'archived_at', 'body', 'body_format', 'clicked_at', 'created_at', 'data', 'id',
      'notification_id', 'read', 'read_at', 'seen', 'seen_at', 'severity', 'snoozed_until', 'tags', 'title', 'topic',
    ])
    const bobId = (await call('GET', '/v1/inbox', bob)).body.data[0].id as string
    for (const op of ['read', 'seen', 'archive']) expect((await call('POST', `/v1/inbox/${op}`, alice, { ids: [bobId] })).body).toEqual({ updated: 0 })
    expect((await call('GET', '/v1/inbox', bob)).body).toMatchObject({ unread_count: 1, data: [{ read: false, seen: false, archived: false }] })
    // ?token= is for the stream only (EventSource cannot set headers): elsewhere it would put
    // tokens in URLs and logs, so it is not read.
    expect((await call('GET', `/v1/inbox/unread-count?token=${bob}`, null)).status).toBe(401)
    expect((await call('POST', `/v1/inbox/read-all?token=${bob}`, null)).status).toBe(401)
    expect((await call('GET', '/v1/inbox/unread-count', bob)).body).toEqual({ unread_count: 1 })
    h.clock.advance(86_400_000)
    expect((await call('GET', '/v1/inbox', alice)).status).toBe(401)
  })

  it('keeps unread_count exact across read, unread, archive and read-all over several pages', async () => {
    const { call, tokenFor } = await setup()
    for (let i = 0; i < 25; i++) await h.notify.notifications.send({ topic: i % 2 ? 'odd' : 'even', recipients: ['u1'], title: `m${i}` })
    await h.drain()
    const t = await tokenFor('u1')
    const pages: Record<string, any>[] = [] // eslint-disable-line @typescript-eslint/no-explicit-any
    let cursor: string | null = null
    do {
      const page: Record<string, any> = (await call('GET', `/v1/inbox?limit=10${cursor ? `&cursor=${cursor}` : ''}`, t)).body // eslint-disable-line @typescript-eslint/no-explicit-any
      pages.push(page)
      cursor = page.next_cursor
    } while (cursor)
    expect(pages.map((p) => p.data.length)).toEqual([10, 10, 5])
    expect(pages.every((p) => p.unread_count === 25)).toBe(true)
    const ids = pages.flatMap((p) => p.data.map((m: { id: string }) => m.id))
    expect(new Set(ids).size).toBe(25)
    // A cursor made before v3 (the last message id, base64url) still continues after that message.
    const oldCursor = Buffer.from(ids[9]!).toString('base64url')
    expect((await call('GET', `/v1/inbox?limit=10&cursor=${oldCursor}`, t)).body.data.map((m: { id: string }) => m.id)).toEqual(ids.slice(10, 20))
    // A cursor this API never handed out is 400, not silently the first page.
    for (const bad of ['!!', Buffer.from('zzz').toString('base64url')]) {
      expect((await call('GET', `/v1/inbox?cursor=${bad}`, t)).status).toBe(400)
    }
    expect(ids[0]).toBe(pages[0]!.data[0].id)
    expect(pages[0]!.data[0].title).toBe('m24')
    const count = async () => (await call('GET', '/v1/inbox/unread-count', t)).body.unread_count
    expect((await call('POST', '/v1/inbox/seen', t, { ids: [ids[24], ids[24]] })).body).toEqual({ updated: 1 })
    expect(await count()).toBe(25)
    expect((await call('POST', '/v1/inbox/read', t, { ids: ids.slice(0, 12) })).body).toEqual({ updated: 12 })
    expect((await call('POST', '/v1/inbox/read', t, { ids: ids.slice(0, 12) })).body).toEqual({ updated: 0 })
    expect(await count()).toBe(13)
    expect((await call('POST', '/v1/inbox/unread', t, { ids: ids.slice(10, 12) })).body).toEqual({ updated: 2 })
    expect(await count()).toBe(15)
    // archiving read messages leaves the count; archiving unread ones lowers it
    expect((await call('POST', '/v1/inbox/archive', t, { ids: [ids[0], ids[1], ids[20], ids[21]] })).body).toEqual({ updated: 4 })
    expect(await count()).toBe(13)
    expect((await call('GET', '/v1/inbox?status=unread&limit=200', t)).body.data).toHaveLength(13)
    expect((await call('GET', '/v1/inbox?archived=true', t)).body.data).toHaveLength(4)
    expect((await call('GET', '/v1/inbox?topic=odd&limit=200', t)).body.data.every((m: { topic: string }) => m.topic === 'odd')).toBe(true)
    expect((await call('POST', '/v1/inbox/unarchive', t, { ids: [ids[20]] })).body).toEqual({ updated: 1 })
    expect(await count()).toBe(14)
    expect((await call('POST', '/v1/inbox/read-all', t)).body).toEqual({ updated: 15 })
    expect(await count()).toBe(0)
    // an archived unread message, read by read-all, stays out of the count when unarchived
    expect((await call('POST', '/v1/inbox/unarchive', t, { ids: [ids[21]] })).body).toEqual({ updated: 1 })
    expect(await count()).toBe(0)
    expect((await call('POST', '/v1/inbox/read', t, { ids: [] })).status).toBe(400)
  })
})
