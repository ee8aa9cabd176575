/* eslint-disable @typescript-eslint/no-explicit-any */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'

/**
 * Bad input never hurts (docs/api.md): property tests throw malformed JSON, wrong types, huge and
 * deeply nested values, unicode edge cases, prototype-pollution keys, header injection, path
 * traversal and silly pagination at every route. Every answer must be below 500, and every 4xx
 * must carry `{"error": {"code", "message"}}`. Object.prototype must stay clean. The table of
 * schema, template, markdown, filter, duration and time cases per route, with a time bound and
 * another tenant's probe, is test/api-hostile-table.test.ts (cases in test/support/hostile-cases.ts).
 */

type Route = { method: string; path: string; body: boolean; auth: 'admin' | 'user' | 'none' }

/** Every route of docs/api.md; `:id` is replaced per run. The SSE stream is only hit with bad tokens. */
const ROUTES: Route[] = [
  ['GET', '/healthz', 'none'], ['GET', '/readyz', 'none'], ['GET', '/metrics', 'admin'], ['GET', '/openapi.json', 'none'],
  ['POST', '/v1/keys', 'admin'], ['GET', '/v1/keys', 'viewer'], ['DELETE', '/v1/keys/:id', 'admin'],
  ['POST', '/v1/endpoints', 'admin'], ['GET', '/v1/endpoints', 'admin'], ['GET', '/v1/endpoints/:id', 'admin'],
  ['PATCH', '/v1/endpoints/:id', 'admin'], ['DELETE', '/v1/endpoints/:id', 'admin'], ['GET', '/v1/endpoints/:id/secret', 'admin'],
  ['POST', '/v1/endpoints/:id/secret/rotate', 'admin'], ['POST', '/v1/endpoints/:id/enable', 'admin'],
  ['POST', '/v1/endpoints/:id/recover', 'admin'], ['POST', '/v1/endpoints/:id/test', 'admin'],
  ['POST', '/v1/events', 'admin'], ['POST', '/v1/events/batch', 'admin'], ['GET', '/v1/events/:id', 'admin'],
  ['GET', '/v1/deliveries', 'admin'], ['GET', '/v1/deliveries/:id', 'admin'], ['POST', '/v1/deliveries/:id/redeliver', 'admin'],
  ['PUT', '/v1/users/:id', 'admin'], ['GET', '/v1/users/:id', 'admin'], ['DELETE', '/v1/users/:id', 'admin'],
  ['POST', '/v1/users/:id/tokens', 'admin'], ['GET', '/v1/users/:id/preferences', 'admin'],
  ['PUT', '/v1/subscriptions', 'admin'], ['DELETE', '/v1/subscriptions', 'admin'], ['GET', '/v1/subscriptions', 'admin'],
  ['PUT', '/v1/preferences', 'admin'], ['PUT', '/v1/templates', 'admin'], ['GET', '/v1/templates', 'admin'],
  ['POST', '/v1/notifications', 'admin'], ['GET', '/v1/notifications/:id', 'admin'],
  ['GET', '/v1/inbox', 'user'], ['GET', '/v1/inbox/unread-count', 'user'], ['POST', '/v1/inbox/read', 'user'],
  ['POST', '/v1/inbox/unread', 'user'], ['POST', '/v1/inbox/seen', 'user'], ['POST', '/v1/inbox/archive', 'user'],
  ['POST', '/v1/inbox/unarchive', 'user'], ['POST', '/v1/inbox/read-all', 'user'],
].map(([method, path, auth]) => ({ method: method!, path: path!, auth: auth as Route['auth'], body: ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method!) }))
const BODY_ROUTES = ROUTES.filter((r) => r.body)
const ID_ROUTES = ROUTES.filter((r) => r.path.includes(':id'))
const LIST_ROUTES = ['/v1/keys', '/v1/endpoints', '/v1/deliveries', '/v1/templates', '/v1/subscriptions', '/v1/inbox']

let f: ApiFixture
let userToken = ''
const ids: Record<string, string> = {}
const protoKeys = Object.getOwnPropertyNames(Object.prototype).sort()
const statuses = new Map<number, number>()

beforeAll(async () => {
  f = await apiFixture()
  const ep = await f.json('POST', '/v1/endpoints', { body: { url: 'http://127.0.0.1:9/hook' } })
  ids.endpoint = ep.body.id
  const ev = await f.json('POST', '/v1/events', { body: { type: 'seed.event', data: { a: 1 } } })
  ids.event = ev.body.id
  ids.delivery = (await f.json('GET', `/v1/events/${ids.event}`)).body.deliveries?.[0]?.id ?? 'dlv_x'
  await f.json('PUT', '/v1/users/u_seed', { body: { email: 'seed@example.com' } })
  const tok = await f.json('POST', '/v1/users/u_seed/tokens', { body: {} })
  userToken = tok.body.token
  expect(typeof userToken).toBe('string')
}, 30_000)

afterAll(async () => {
  console.log(`[hostile-input] answers by status: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`)
  await f?.close()
})

/** Sends one request and checks the error contract; returns the status. */
async function probe(route: Route, opts: { path?: string; raw?: string | Uint8Array; body?: unknown; headers?: Record<string, string>; token?: string | null } = {}): Promise<number> {
  const path = opts.path ?? route.path.replace(':id', ids.endpoint!)
  const key = opts.token !== undefined ? opts.token : route.auth === 'user' ? userToken : route.auth === 'admin' ? f.keys.admin : null
  const headers = { ...(opts.headers ?? {}) }
  if (opts.raw !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json'
  const res = await f.call(route.method, path, { key, raw: opts.raw, body: opts.body, headers })
  const text = await res.text()
  const where = `${route.method} ${path} → ${res.status} ${text.slice(0, 300)}`
  statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
  expect(res.status, where).toBeLessThan(500)
  if (res.status >= 400) {
    let body: any
    try {
      body = JSON.parse(text)
    } catch {
      throw new Error(`non-JSON error: ${where}`)
    }
    expect(body?.error?.code, where).toMatch(/^[a-z][a-z0-9_]*$/)
    expect(typeof body.error.message, where).toBe('string')
  }
  return res.status
}

const pick = <T>(list: readonly T[]) => fc.constantFrom(...list)
const nested = (depth: number, open: string, close: string, inner = '1') => open.repeat(depth) + inner + close.repeat(depth)

/** Values of the wrong type, of the wrong size, and with unicode edge cases. */
const hostileValue = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.string({ unit: 'binary', maxLength: 50 }),
  pick(['\ud800', '\udfff', 'a\u0000b', '\u202e', '\ufeff', '𝕏'.repeat(10), 'x'.repeat(70_000), '../../etc/passwd', '%2e%2e%2f',
    'a\r\nx-injected: 1', '<script>', "'; DROP TABLE events; --", -1, 0, 1e308, -1e308, 2 ** 53 + 1, true, null, [], {}]),
)

describe('hostile input never produces a 5xx', () => {
  it('malformed and non-JSON bodies on every body route', async () => {
    const malformed = fc.oneof(
      fc.string({ maxLength: 200 }),
      pick(['{', '[', '{"a":', '{"type":"x","data":{}', 'null', 'true', '1', '"str"', '[]', '{}}', '\u0000', '{"a":1,}', "{'a':1}", 'NaN', '{"a":1e999}']),
      fc.jsonValue().map((v) => JSON.stringify(v)),
    )
    await fc.assert(fc.asyncProperty(pick(BODY_ROUTES), malformed, async (route, raw) => void (await probe(route, { raw }))), { numRuns: 400 })
    await fc.assert(
      fc.asyncProperty(pick(BODY_ROUTES), fc.uint8Array({ minLength: 1, maxLength: 64 }), async (route, bytes) => void (await probe(route, { raw: bytes }))),
      { numRuns: 500 },
    )
    for (const route of BODY_ROUTES.slice(0, 10)) {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'application/jsonx', '']) {
        await probe(route, { raw: '{"a":1}', headers: { 'content-type': type } })
      }
    }
  })

  it('wrong types, unicode edge cases and pollution keys in every field', async () => {
    const fields = ['url', 'type', 'data', 'id', 'events', 'name', 'role', 'headers', 'event_types', 'timeout_ms', 'secret', 'signature', 'retry_schedule',
      'max_concurrency', 'rate_limit', 'ordered', 'metadata', 'since', 'until', 'grace_seconds', 'topic', 'principal', 'recipients', 'channels',
      'title', 'body', 'payload', 'severity', 'user_id', 'channel', 'enabled', 'digest', 'quiet_hours', 'locale', 'format', 'subject', 'ids',
      'ttl_seconds', 'email', 'roles', 'teams', 'timezone', 'dedup_key', 'ordering_key', '__proto__', 'constructor', 'prototype']
    const body = fc.dictionary(pick(fields), hostileValue, { maxKeys: 6 })
    await fc.assert(fc.asyncProperty(pick(BODY_ROUTES), body, async (route, b) => void (await probe(route, { raw: JSON.stringify(b) }))), { numRuns: 1000 })
    for (const route of BODY_ROUTES) {
      for (const raw of ['{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"polluted":1}}}', '{"data":{"__proto__":{"polluted":1}},"type":"p"}',
        '{"type":"p","data":{"constructor":{"prototype":{"polluted":1}}}}', '{"metadata":{"__proto__":{"polluted":1}},"url":"http://127.0.0.1:9/"}',
        '{"headers":{"__proto__":"x"},"url":"http://127.0.0.1:9/"}', '{"payload":{"__proto__":{"isAdmin":true}},"topic":"t"}']) {
        await probe(route, { raw })
      }
    }
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(protoKeys)
    expect(({} as any).polluted).toBeUndefined()
    expect(({} as any).isAdmin).toBeUndefined()
  })

  it('valid-looking bodies with one hostile field', async () => {
    const templates: [Route, Record<string, unknown>][] = [
      [BODY_ROUTES.find((r) => r.path === '/v1/endpoints' && r.method === 'POST')!, { url: 'http://127.0.0.1:9/h' }],
      [BODY_ROUTES.find((r) => r.path === '/v1/events')!, { type: 'a.b', data: {} }],
      [BODY_ROUTES.find((r) => r.path === '/v1/events/batch')!, { events: [{ type: 'a.b', data: {} }] }],
      [BODY_ROUTES.find((r) => r.path === '/v1/notifications')!, { topic: 'a.b', recipients: ['user:u_seed'], title: 't' }],
      [BODY_ROUTES.find((r) => r.path === '/v1/preferences')!, { user_id: 'u_seed', topic: '*', channel: '*', enabled: true }],
      [BODY_ROUTES.find((r) => r.path === '/v1/templates')!, { topic: 'a.b', channel: 'inbox', locale: 'en', subject: 's', body: 'b', format: 'text', active: true }],
      [BODY_ROUTES.find((r) => r.path === '/v1/keys')!, { name: 'k', role: 'viewer' }],
      [BODY_ROUTES.find((r) => r.path === '/v1/users/:id')!, { email: 'a@example.com' }],
      [BODY_ROUTES.find((r) => r.path === '/v1/subscriptions' && r.method === 'PUT')!, { topic: 'a.b', principal: 'user:u_seed' }],
      [BODY_ROUTES.find((r) => r.path === '/v1/inbox/read')!, { ids: ['msg_x'] }],
      [BODY_ROUTES.find((r) => r.path === '/v1/endpoints/:id/recover')!, { since: '2020-01-01T00:00:00Z' }],
    ]
    await fc.assert(
      fc.asyncProperty(pick(templates), fc.string({ maxLength: 20 }), hostileValue, async ([route, template], _salt, value) => {
        const fields = Object.keys(template)
        for (const field of fields) await probe(route, { raw: JSON.stringify({ ...template, [field]: value }) })
      }),
      { numRuns: 250 },
    )
  })

  it('deep nesting and oversized bodies', async () => {
    const events = BODY_ROUTES.find((r) => r.path === '/v1/events')!
    for (const depth of [1_000, 10_000, 100_000]) {
      await probe(events, { raw: `{"type":"deep","data":{"x":${nested(depth, '[', ']')}}}` })
      await probe(events, { raw: `{"type":"deep","data":${nested(depth, '{"a":', '}')}}` })
    }
    for (const route of BODY_ROUTES) {
      await probe(route, { raw: nested(10_000, '[', ']') })
      const status = await probe(route, { raw: `{"x":"${'y'.repeat(300 * 1024)}"}` })
      expect(status).toBe(413)
    }
    // Whatever was accepted must also be readable back without a 5xx.
    const get = (path: string) => probe({ method: 'GET', path, auth: 'admin', body: false })
    for (const depth of [60, 5_000, 50_000]) {
      const ev = await f.json('POST', '/v1/events', { raw: `{"type":"deep.read","data":{"x":${nested(depth, '[', ']')}}}`, headers: { 'content-type': 'application/json' } })
      if (ev.status === 202) await get(`/v1/events/${ev.body.id}`)
      const ep = await f.json('POST', '/v1/endpoints', { raw: `{"url":"http://127.0.0.1:9/d","event_types":["none"],"metadata":{"m":${nested(depth, '{"a":', '}')}}}`, headers: { 'content-type': 'application/json' } })
      if (ep.status === 201) {
        await get(`/v1/endpoints/${ep.body.id}`)
        await get('/v1/endpoints?limit=200')
      }
      const n = await f.json('POST', '/v1/notifications', { raw: `{"topic":"deep.read","recipients":["user:u_seed"],"title":"t","payload":{"p":${nested(depth, '[', ']')}}}`, headers: { 'content-type': 'application/json' } })
      if (n.status === 202) await get(`/v1/notifications/${n.body.id}`)
    }
    await get('/v1/deliveries?limit=200')
    const batch = BODY_ROUTES.find((r) => r.path === '/v1/events/batch')!
    const tooMany = await probe(batch, { raw: JSON.stringify({ events: Array.from({ length: 1001 }, () => ({ type: 'a', data: {} })) }) })
    expect(tooMany).toBe(400)
  })

  it('custom headers with CR/LF or bad names are refused at endpoint create', async () => {
    const create = BODY_ROUTES.find((r) => r.path === '/v1/endpoints' && r.method === 'POST')!
    const bad = [{ 'x-a': 'v\r\nx-injected: 1' }, { 'x-a': 'v\nx' }, { 'x-a': 'v\rx' }, { 'x a': 'v' }, { 'x-a\r\nb': 'v' }, { '': 'v' },
      { 'x-a:': 'v' }, { 'x-\u00e9': 'v' }, { 'x-a': 'v\u0000' },
      // Headers Postbox owns cannot be overridden, in any case.
      { 'Webhook-Signature': 'v1,forged' }, { 'webhook-id': 'x' }, { 'content-type': 'text/plain' }, { Host: 'internal' },
      { 'Content-Length': '0' }, { 'transfer-encoding': 'chunked' }, { 'postbox-attempt': '1' }, { 'X-Postbox-Signature': 'sha256=00' },
      { 'user-agent': 'evil' }, { connection: 'close' }]
    for (const headers of bad) {
      const status = await probe(create, { body: { url: 'http://127.0.0.1:9/h', headers } })
      expect(status, JSON.stringify(headers)).toBe(400)
    }
    const fresh = await f.json('POST', '/v1/endpoints', { body: { url: 'http://127.0.0.1:9/fresh' } })
    expect(fresh.status).toBe(201)
    const patch = ROUTES.find((r) => r.method === 'PATCH')!
    const path = `/v1/endpoints/${fresh.body.id}`
    expect(await probe(patch, { path, body: { headers: { 'x-a': 'v\r\nx-injected: 1' } } })).toBe(400)
    expect(await probe(patch, { path, body: { headers: { 'x a': 'v' } } })).toBe(400)
  })

  it('path traversal and junk in ids', async () => {
    const junkId = fc.oneof(
      pick(['..', '../', '..%2f', '%2e%2e%2f', '%2e%2e', '..%2F..%2Fetc%2Fpasswd', '%00', 'a%00b', '%ff', '%', '%zz', '.', '%2f',
        encodeURIComponent('ep_../../x'), 'x'.repeat(10_000), '%E2%80%AE', encodeURIComponent('\ud83d\ude00'), '%ED%A0%80', 'evt_\u0000']),
      fc.string({ minLength: 1, maxLength: 40 }).map(encodeURIComponent),
    )
    await fc.assert(
      fc.asyncProperty(pick(ID_ROUTES), junkId, async (route, id) => {
        const status = await probe(route, { path: route.path.replace(':id', id), body: route.body ? {} : undefined })
        // Any user id is valid (docs/notifications-basics.md: inbox recipients need no registration); other ids name rows that do not exist.
        if (!route.path.startsWith('/v1/users/')) expect(status, `${route.method} ${route.path} ${id}`).toBeGreaterThanOrEqual(400)
      }),
      { numRuns: 500 },
    )
  })

  it('negative, huge and non-numeric pagination and garbage cursors', async () => {
    const limits = fc.oneof(pick(['-1', '0', '201', '1e3', '1.5', 'abc', '', '999999999999999999999', 'NaN', 'Infinity', '0x10', ' 5', '5 ', '%00']), fc.integer().map(String))
    const cursors = fc.oneof(pick(['', '=', '!!!', 'AAAA', Buffer.from('../../x').toString('base64url'), Buffer.from('\u0000').toString('base64url'), 'x'.repeat(5000)]), fc.string({ maxLength: 60 }))
    await fc.assert(
      fc.asyncProperty(pick(LIST_ROUTES), limits, cursors, async (path, limit, cursor) => {
        const route = ROUTES.find((r) => r.path === path && r.method === 'GET')!
        await probe(route, { path: `${path}?limit=${encodeURIComponent(limit)}&cursor=${encodeURIComponent(cursor)}` })
      }),
      { numRuns: 500 },
    )
    for (const q of ['status=bogus', 'status=', 'endpoint_id=' + 'x'.repeat(5000), 'event_type=%00', 'limit=1&limit=2', 'archived=maybe', 'status=all&archived=1']) {
      await probe(ROUTES.find((r) => r.path === '/v1/deliveries')!, { path: `/v1/deliveries?${q}` })
      await probe(ROUTES.find((r) => r.path === '/v1/inbox')!, { path: `/v1/inbox?${q}` })
    }
  })

  it('roles: a publisher only publishes, a viewer only reads, a user token only reaches its inbox', async () => {
    const PUBLISH = new Set(['POST /v1/events', 'POST /v1/events/batch', 'POST /v1/notifications'])
    const wrong: string[] = []
    for (const route of ROUTES.filter((r) => r.auth === 'admin')) {
      const name = `${route.method} ${route.path}`
      const path = route.path.replace(':id', 'no_such_id')
      const pub = await probe(route, { path, token: f.keys.publisher, body: route.body ? {} : undefined })
      const view = await probe(route, { path, token: f.keys.viewer, body: route.body ? {} : undefined })
      const user = await probe(route, { path, token: userToken, body: route.body ? {} : undefined })
      if (PUBLISH.has(name) ? pub === 403 : pub !== 403) wrong.push(`publisher ${name} → ${pub}`)
      // Endpoint secrets are admin only; every other GET is open to viewers (docs/api.md).
      const viewerMayRead = route.method === 'GET' && !route.path.endsWith('/secret')
      if (viewerMayRead ? view === 403 : view !== 403) wrong.push(`viewer ${name} → ${view}`)
      if (user !== 401) wrong.push(`user token ${name} → ${user}`)
    }
    for (const route of ROUTES.filter((r) => r.auth === 'user')) {
      const status = await probe(route, { token: f.keys.admin, body: route.body ? { ids: ['msg_x'] } : undefined })
      if (status !== 401) wrong.push(`admin key on ${route.method} ${route.path} → ${status}`)
    }
    expect(wrong).toEqual([])
  })

  it("a user token never sees or changes another user's messages", async () => {
    for (const u of ['u_a', 'u_b']) {
      const n = await f.json('POST', '/v1/notifications', { body: { topic: 'iso.test', recipients: [`user:${u}`], title: `for ${u}` } })
      expect(n.status, JSON.stringify(n.body)).toBe(202)
    }
    f.pb.start()
    const token = async (u: string): Promise<string> => (await f.json('POST', `/v1/users/${u}/tokens`, { body: {} })).body.token
    const [a, b] = [await token('u_a'), await token('u_b')]
    const inbox = async (t: string) => {
      for (let i = 0; i < 100; i++) {
        const r = await f.json('GET', '/v1/inbox?status=all', { key: t })
        if (r.body.data?.length > 0) return r.body
        await new Promise((res) => setTimeout(res, 20))
      }
      throw new Error('inbox stayed empty')
    }
    const bIds = (await inbox(b)).data.map((m: { id: string }) => m.id)
    expect((await inbox(a)).data.map((m: { id: string }) => m.id)).not.toEqual(expect.arrayContaining(bIds))
    for (const action of ['read', 'seen', 'archive', 'unread', 'unarchive']) {
      const r = await f.json('POST', `/v1/inbox/${action}`, { key: a, body: { ids: bIds } })
      expect([r.status, r.body.updated], action).toEqual([200, 0])
    }
    const after = await inbox(b)
    expect(after.unread_count).toBe(1)
    expect(after.data[0]).toMatchObject({ read: false, archived: false })
  })

  it('templates cannot read files from the server (include, render, layout)', async () => {
    f.pb.start()
    const token = (await f.json('POST', '/v1/users/u_tpl/tokens', { body: {} })).body.token
    const tags = ['{% include "package.json" %}', '{% render "package.json" %}', '{% layout "package.json" %}x', '{% include "./package.json" %}',
      '{% include "../main/package.json" %}', `{% include "${process.cwd()}/package.json" %}`, '{% render "schema.sql" %}']
    for (const [i, body] of tags.entries()) {
      const topic = `tpl.file${i}`
      const put = await f.json('PUT', '/v1/templates', { body: { topic, channel: 'inbox', locale: 'en', subject: body, body, format: 'text', active: true } })
      expect([201, 400], JSON.stringify(put.body)).toContain(put.status)
      const n = await f.json('POST', '/v1/notifications', { body: { topic, recipients: ['user:u_tpl'], title: 'fallback' } })
      expect(n.status, JSON.stringify(n.body)).toBe(202)
    }
    let messages: { title: string; body: string }[] = []
    for (let i = 0; i < 100; i++) {
      messages = (await f.json('GET', '/v1/inbox?status=all&limit=200', { key: token })).body.data ?? []
      const delivered = (await f.json('GET', '/v1/deliveries?status=pending')).body.data.length === 0
      if (delivered && messages.length > 0) break
      await new Promise((r) => setTimeout(r, 20))
    }
    const leaked = messages.filter((m) => /"name": "postbox"|CREATE TABLE/.test(`${m.title}\n${m.body}`))
    expect(leaked.map((m) => m.body.slice(0, 80))).toEqual([])
  })

  it('action_url must be a web link, never a script (inbox UIs render it as a link)', async () => {
    for (const url of ['javascript:alert(1)', 'JaVaScRiPt:alert(1)', ' javascript:alert(1)', 'java\tscript:alert(1)', 'data:text/html,<script>alert(1)</script>',
      'vbscript:msgbox(1)', 'file:///etc/passwd', '//evil.example/x']) {
      const r = await f.json('POST', '/v1/notifications', { body: { topic: 'xss.test', recipients: ['user:u_seed'], title: 't', action_url: url } })
      expect([r.status, r.body?.error?.code], url).toEqual([400, 'validation_failed'])
    }
    for (const url of ['https://app.example.com/c/1', 'http://localhost:3000/x', '/inbox/42']) {
      const r = await f.json('POST', '/v1/notifications', { body: { topic: 'xss.test', recipients: ['user:u_seed'], title: 't', action_url: url } })
      expect(r.status, url).toBe(202)
    }
  })

  it('garbage credentials on every route', async () => {
    const creds = fc.oneof(
      pick(['', 'pbk_', 'pbu_', 'pbu_x.y', 'pbu_..', 'pbk_' + 'A'.repeat(5000), 'pbu_' + 'A'.repeat(5000) + '.' + 'B'.repeat(40), userToken + 'x', f?.keys?.admin ?? '']),
      fc.string({ unit: 'grapheme-ascii', maxLength: 60 }),
    )
    await fc.assert(
      fc.asyncProperty(pick(ROUTES), creds, async (route, token) => {
        await probe(route, { token: token.replace(/[\r\n]/g, ''), body: route.body ? {} : undefined })
      }),
      { numRuns: 500 },
    )
    for (const q of ['token=', 'token=pbu_x.y', `token=${'A'.repeat(3000)}`, 'since=-1&token=pbu_x.y', 'token=%00']) {
      await probe({ method: 'GET', path: '/v1/inbox/stream', auth: 'none', body: false }, { path: `/v1/inbox/stream?${q}` })
    }
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(protoKeys)
  })
})
