import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createApp } from '../src/api/app.js'
import type { ApiDeps } from '../src/api/deps.js'
import { createLogger } from '../src/log.js'
import { apiFixture, type ApiFixture, type Req } from './support/api.js'
import pg from 'pg'
import type { PgStore } from '../src/store/pg/index.js'
import { TEST_BACKEND } from './support/backend.js'
import { PG_URL } from './support/pg.js'

/** One row of the error catalogue (docs/api.md): a request and the status and code it must give. */
interface Scenario {
  name: string
  method: string
  path: string
  req?: Req
  status: number
  code: string
}

const big = (n: number) => JSON.stringify({ type: 'a.b', data: { pad: 'x'.repeat(n) } })

function chunked(text: string, chunkSize = 1024): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text)
  let at = 0
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close()
      controller.enqueue(bytes.slice(at, at + chunkSize))
      at += chunkSize
    },
  })
}

const SCENARIOS: Scenario[] = [
  { name: 'malformed JSON', method: 'POST', path: '/v1/events', req: { raw: '{"type":', headers: { 'content-type': 'application/json' } }, status: 400, code: 'invalid_json' },
  { name: 'invalid UTF-8', method: 'POST', path: '/v1/events', req: { raw: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), headers: { 'content-type': 'application/json' } }, status: 400, code: 'invalid_json' },
  { name: 'lone surrogate escape', method: 'PUT', path: '/v1/subscriptions', req: { raw: '{"topic":"a.b","principal":"\\ud800"}', headers: { 'content-type': 'application/json' } }, status: 400, code: 'invalid_json' },
  { name: 'wrong type', method: 'POST', path: '/v1/events', req: { body: { type: 'bad type!', data: [] } }, status: 400, code: 'validation_failed' },
  { name: 'body is an array', method: 'POST', path: '/v1/events', req: { body: [1, 2] }, status: 400, code: 'validation_failed' },
  // 1e400 parses to Infinity, which would be stored as null: a different value than the one sent.
  { name: 'number beyond a double', method: 'POST', path: '/v1/events', req: { raw: '{"type":"a","data":{"n":1e400}}', headers: { 'content-type': 'application/json' } }, status: 400, code: 'validation_failed' },
  { name: 'negative number beyond a double', method: 'POST', path: '/v1/events', req: { raw: '{"type":"a","data":{"n":[-' + '9'.repeat(400) + ']}}', headers: { 'content-type': 'application/json' } }, status: 400, code: 'validation_failed' },
  { name: 'empty JSON body on a required body', method: 'POST', path: '/v1/events', req: { raw: '', headers: { 'content-type': 'application/json' } }, status: 400, code: 'validation_failed' },
  { name: 'bad limit', method: 'GET', path: '/v1/deliveries?limit=0', status: 400, code: 'validation_failed' },
  { name: 'limit too large', method: 'GET', path: '/v1/endpoints?limit=201', status: 400, code: 'validation_failed' },
  { name: 'non-numeric limit', method: 'GET', path: '/v1/keys?limit=abc', status: 400, code: 'validation_failed' },
  { name: 'forged cursor', method: 'GET', path: '/v1/endpoints?cursor=%25%25', status: 400, code: 'validation_failed' },
  { name: 'forged delivery cursor', method: 'GET', path: '/v1/deliveries?cursor=!!', status: 400, code: 'validation_failed' },
  // Well-formed base64url, but decoding to something this API never hands out ("zzz").
  { name: 'made-up key cursor', method: 'GET', path: '/v1/keys?cursor=enp6', status: 400, code: 'validation_failed' },
  // Cursors this API hands out, but for another list: each list takes only its own kind.
  { name: 'subscription cursor on deliveries', method: 'GET', path: '/v1/deliveries?cursor=c3ViLzE3MDAwMDAwMDAwMDAvdG9waWMvdXNlcjp1MQ', status: 400, code: 'validation_failed' },
  { name: 'offset cursor on events', method: 'GET', path: '/v1/events?cursor=bzUw', status: 400, code: 'validation_failed' },
  { name: 'inbox position on endpoints', method: 'GET', path: '/v1/endpoints?cursor=MTI', status: 400, code: 'validation_failed' },
  { name: 'subscription cursor on keys', method: 'GET', path: '/v1/keys?cursor=c3ViLzE3MDAwMDAwMDAwMDAvdG9waWMvdXNlcjp1MQ', status: 400, code: 'validation_failed' },
  // Another id-ordered list's cursor would otherwise read as an empty last page.
  { name: 'delivery cursor on events', method: 'GET', path: '/v1/events?cursor=ZGx2XzAxamFiY2RlZmdoamttbnBxcnN0dnd4eXow', status: 400, code: 'validation_failed' },
  { name: 'event cursor on deliveries', method: 'GET', path: '/v1/deliveries?cursor=ZXZ0XzAxamFiY2RlZmdoamttbnBxcnN0dnd4eXow', status: 400, code: 'validation_failed' },
  { name: 'key cursor on endpoints', method: 'GET', path: '/v1/endpoints?cursor=a2V5XzAxamFiY2RlZmdoamttbnBxcnN0dnd4eXow', status: 400, code: 'validation_failed' },
  { name: 'endpoint cursor on keys', method: 'GET', path: '/v1/keys?cursor=ZXBfMDFqYWJjZGVmZ2hqa21ucHFyc3R2d3h5ejA', status: 400, code: 'validation_failed' },
  { name: 'delivery cursor on subscriptions', method: 'GET', path: '/v1/subscriptions?cursor=ZGx2XzAxamFiY2RlZmdoamttbnBxcnN0dnd4eXow', status: 400, code: 'validation_failed' },
  // Receivers act on these as coming from Postbox itself.
  { name: 'reserved postbox. event type', method: 'POST', path: '/v1/events', req: { body: { type: 'postbox.endpoint.disabled', data: {} } }, status: 400, code: 'validation_failed' },
  { name: 'reserved notification. event type in a batch', method: 'POST', path: '/v1/events/batch', req: { body: { events: [{ type: 'a.b', data: {} }, { type: 'notification.x', data: {} }] } }, status: 400, code: 'validation_failed' },
  { name: 'bad status filter', method: 'GET', path: '/v1/deliveries?status=lost', status: 400, code: 'validation_failed' },
  { name: 'batch over 1,000', method: 'POST', path: '/v1/events/batch', req: { body: { events: Array.from({ length: 1001 }, () => ({ type: 'a', data: {} })) } }, status: 400, code: 'validation_failed' },
  { name: 'empty batch', method: 'POST', path: '/v1/events/batch', req: { body: { events: [] } }, status: 400, code: 'validation_failed' },
  { name: 'body over max (Content-Length)', method: 'POST', path: '/v1/events', req: { raw: big(300_000), headers: { 'content-type': 'application/json' } }, status: 413, code: 'payload_too_large' },
  { name: 'body over max (chunked, no Content-Length)', method: 'POST', path: '/v1/events', req: { raw: chunked(big(300_000)), headers: { 'content-type': 'application/json' } }, status: 413, code: 'payload_too_large' },
  { name: 'lying Content-Length is not trusted', method: 'POST', path: '/v1/events', req: { raw: chunked(big(300_000)), headers: { 'content-type': 'application/json', 'content-length': '10' } }, status: 413, code: 'payload_too_large' },
  { name: 'text/plain body', method: 'POST', path: '/v1/events', req: { raw: '{"type":"a","data":{}}', headers: { 'content-type': 'text/plain' } }, status: 415, code: 'unsupported_media_type' },
  { name: 'form body', method: 'POST', path: '/v1/endpoints', req: { raw: 'url=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }, status: 415, code: 'unsupported_media_type' },
  { name: 'body without Content-Type', method: 'POST', path: '/v1/keys', req: { raw: '{"role":"viewer"}' }, status: 415, code: 'unsupported_media_type' },
  { name: 'unknown route', method: 'GET', path: '/v1/nothing-here', status: 404, code: 'not_found' },
  { name: 'unknown route without /v1', method: 'GET', path: '/nope', status: 404, code: 'not_found' },
  { name: 'unknown endpoint', method: 'GET', path: '/v1/endpoints/ep_missing', status: 404, code: 'not_found' },
  { name: 'unknown event', method: 'GET', path: '/v1/events/evt_missing', status: 404, code: 'not_found' },
  { name: 'unknown delivery', method: 'GET', path: '/v1/deliveries/dlv_missing', status: 404, code: 'not_found' },
  { name: 'redeliver unknown', method: 'POST', path: '/v1/deliveries/dlv_missing/redeliver', status: 404, code: 'not_found' },
  { name: 'private destination', method: 'POST', path: '/v1/endpoints', req: { body: { url: 'http://10.1.2.3/hook' } }, status: 422, code: 'destination_not_allowed' },
  // A user a preference or a user: selector could never name.
  { name: 'user id with a colon', method: 'PUT', path: '/v1/users/a:b', req: { body: {} }, status: 400, code: 'validation_failed' },
  { name: 'user id with a space', method: 'PUT', path: '/v1/users/a%20b', req: { body: {} }, status: 400, code: 'validation_failed' },
  { name: 'metadata endpoint', method: 'POST', path: '/v1/endpoints', req: { body: { url: 'http://169.254.169.254/latest' } }, status: 422, code: 'destination_not_allowed' },
  { name: 'no credentials', method: 'GET', path: '/v1/endpoints', req: { key: null }, status: 401, code: 'unauthorized' },
  // The inbox checks its user token before the query or the body, like every key route.
  // …and before reading the body, as the key routes do (a 413 or a slow body would come first).
  { name: 'inbox without a token, oversized body', method: 'POST', path: '/v1/inbox/read', req: { key: null, raw: big(300_000), headers: { 'content-type': 'application/json' } }, status: 401, code: 'unauthorized' },
  { name: 'inbox without a token, bad query', method: 'GET', path: '/v1/inbox?limit=0', req: { key: null }, status: 401, code: 'unauthorized' },
  { name: 'inbox without a token, bad body', method: 'POST', path: '/v1/inbox/read', req: { key: null, body: { ids: 'x' } }, status: 401, code: 'unauthorized' },
  // No id, filter or cursor holds a NUL, and PostgreSQL cannot compare text with one.
  { name: 'NUL in a path id', method: 'GET', path: '/v1/endpoints/ep_%00', status: 400, code: 'validation_failed' },
  { name: 'NUL in a query filter', method: 'GET', path: '/v1/deliveries?endpoint_id=ep_%00x', status: 400, code: 'validation_failed' },
  { name: 'basic auth instead of bearer', method: 'GET', path: '/v1/endpoints', req: { key: null, headers: { authorization: 'Basic YTpi' } }, status: 401, code: 'invalid_token' },
  { name: 'garbage bearer', method: 'GET', path: '/v1/endpoints', req: { key: 'not-a-key' }, status: 401, code: 'invalid_token' },
]

describe('error catalogue (docs/api.md)', () => {
  let f: ApiFixture
  beforeEach(async () => {
    f = await apiFixture({ allowNetworks: [] })
  })
  afterEach(async () => f.close())

  for (const s of SCENARIOS) {
    it(`${s.name}: ${s.method} ${s.path} → ${s.status} ${s.code}`, async () => {
      const res = await f.json(s.method, s.path, s.req)
      expect(res.status).toBe(s.status)
      expect(res.body.error.code).toBe(s.code)
      expect(typeof res.body.error.message).toBe('string')
    })
  }

  it('a refused destination names its field in the same shape as a validation error', async () => {
    const res = await f.json('POST', '/v1/endpoints', { body: { url: 'http://10.1.2.3/hook' } })
    expect(res.status).toBe(422)
    expect(res.body.error.details).toEqual([{ field: 'url', message: 'non-public address', in: 'body' }])
  })

  it('validation_failed lists every bad field with its path', async () => {
    const res = await f.json('POST', '/v1/events/batch', { body: { events: [{ type: 'ok', data: {} }, { type: '', data: 3 }] } })
    expect(res.status).toBe(400)
    const fields = res.body.error.details.map((d: { field: string }) => d.field).sort()
    expect(fields).toEqual(['events.1.data', 'events.1.type'])
    expect(res.body.error.details[0].in).toBe('body')
  })

  it('a body exactly at the limit is accepted', async () => {
    const limit = f.pb.config.maxBody
    const base = big(0)
    const body = big(limit - base.length)
    expect(Buffer.byteLength(body)).toBe(limit)
    const res = await f.json('POST', '/v1/events', { raw: body, headers: { 'content-type': 'application/json' } })
    expect(res.status).toBe(202)
  })

  it('not_eligible: redelivering a pending delivery → 409', async () => {
    const ep = await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/hook' } })
    expect(ep.status).toBe(201)
    await f.json('POST', '/v1/events', { body: { type: 'a.b', data: {} } })
    const list = await f.json('GET', '/v1/deliveries')
    const id = list.body.data[0].id
    const res = await f.json('POST', `/v1/deliveries/${id}/redeliver`)
    expect(res).toMatchObject({ status: 409, body: { error: { code: 'not_eligible' } } })
  })

  it('internal: an unexpected error → 500 internal, logged, with no detail leaked', async () => {
    const lines: string[] = []
    const log = createLogger('error', { write: (s: string) => void lines.push(s) })
    const boom = new Error('secret internal path /etc/shadow')
    const webhooks = { ...f.pb.webhooks, endpoints: { ...f.pb.webhooks.endpoints, list: () => { throw boom } } }
    const deps: ApiDeps = { store: f.pb.store, config: f.pb.config, log, clock: f.pb.clock, webhooks }
    const app = createApp(deps)
    const res = await app.request('/v1/endpoints', { headers: { authorization: `Bearer ${f.keys.admin}` } })
    expect(res.status).toBe(500)
    const text = await res.text()
    expect(JSON.parse(text)).toEqual({ error: { code: 'internal', message: 'Internal error' } })
    expect(text).not.toContain('shadow')
    expect(lines.join('')).toContain('shadow')
  })

  // SQLite's max_page_count makes the file full; PostgreSQL has no such switch.
  if (TEST_BACKEND === 'sqlite') it('unavailable: a full database → 503 and nothing accepted', async () => {
    const db = f.pb.store.sqlite!.db
    const pages = db.pragma('page_count', { simple: true }) as number
    db.pragma(`max_page_count = ${pages}`)
    let res: Awaited<ReturnType<ApiFixture['json']>> = { status: 0, body: null }
    for (let i = 0; i < 50 && res.status !== 503; i++) {
      res = await f.json('POST', '/v1/events/batch', { body: { events: Array.from({ length: 200 }, () => ({ type: 'fill.up', data: { pad: 'y'.repeat(500) } })) } })
    }
    expect(res).toMatchObject({ status: 503, body: { error: { code: 'unavailable' } } })
    const single = await f.json('POST', '/v1/events', { body: { type: 'fill.single', data: { pad: 'z'.repeat(50_000) } } })
    expect(single).toMatchObject({ status: 503, body: { error: { code: 'unavailable' } } })
    expect((await f.pb.store.events.list({ limit: 10, type: 'fill.single' })).data).toEqual([])
    db.pragma('max_page_count = 1073741823')
    expect((await f.json('POST', '/v1/events', { body: { type: 'ok.again', data: {} } })).status).toBe(202)
  })

  it('a NUL in a query value is named as its parameter', async () => {
    const res = await f.json('GET', '/v1/events?type=a%00b')
    expect(res.status).toBe(400)
    expect(res.body.error.details).toEqual([{ field: 'type', message: 'contains a NUL character (%00)', in: 'query' }])
  })

  it('a NUL in a stored text field: stored as sent on SQLite; on PostgreSQL 400 and nothing stored', async () => {
    const res = await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/h', description: 'a\u0000b' } })
    const ntf = await f.json('POST', '/v1/notifications', { body: { topic: 'a.b', recipients: ['u1'], title: 'a\u0000b' } })
    // A NUL inside the JSON of an event's data is stored as the JSON escape on both backends.
    const evt = await f.json('POST', '/v1/events', { body: { type: 'a.b', data: { s: 'a\u0000b' } } })
    expect(evt.status).toBe(202)
    expect((await f.json('GET', `/v1/events/${evt.body.id}`)).body.data).toEqual({ s: 'a\u0000b' })
    if (TEST_BACKEND === 'sqlite') {
      expect(res).toMatchObject({ status: 201, body: { description: 'a\u0000b' } })
      expect(ntf.status).toBe(202)
      return
    }
    for (const r of [res, ntf]) {
      expect(r.status).toBe(400)
      expect(r.body.error).toMatchObject({ code: 'validation_failed', details: [{ field: '(text)', in: 'body' }] })
    }
    expect((await f.json('GET', '/v1/endpoints')).body.data).toEqual([])
    expect((await f.json('GET', '/v1/notifications')).body.data).toEqual([])
  })

  // PostgreSQL can refuse connections (a database closed to connections, a server shutting down).
  if (TEST_BACKEND === 'postgres') it('unavailable: a database that refuses connections → 503, then work again once it accepts them', async () => {
    const pool = (f.pb.store as PgStore).pool
    const name = (await pool.query<{ d: string }>('SELECT current_database() AS d')).rows[0]!.d
    const admin = new pg.Client({ connectionString: PG_URL })
    await admin.connect()
    const allow = (on: boolean) => admin.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} ALLOW_CONNECTIONS ${on}`)
    try {
      await allow(false)
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name])
      for (const [m, p, body] of [['POST', '/v1/events', { type: 'a.b', data: {} }], ['GET', '/v1/endpoints', undefined], ['POST', '/v1/events/batch', { events: [{ type: 'a.b', data: {} }] }]] as const) {
        const res = await f.json(m, p, body ? { body } : {})
        expect(res, `${m} ${p}`).toMatchObject({ status: 503, body: { error: { code: 'unavailable' } } })
      }
      await allow(true)
      expect((await f.json('POST', '/v1/events', { body: { type: 'ok.again', data: {} } })).status).toBe(202)
    } finally {
      await allow(true)
      await admin.end()
    }
  })

  it('every error body has exactly {error: {code, message, details?}}', async () => {
    for (const s of SCENARIOS.slice(0, 6)) {
      const res = await f.json(s.method, s.path, s.req)
      expect(Object.keys(res.body)).toEqual(['error'])
      for (const k of Object.keys(res.body.error)) expect(['code', 'message', 'details']).toContain(k)
    }
  })
})

describe('query parameters given more than once', () => {
  let f: ApiFixture
  beforeEach(async () => {
    f = await apiFixture()
  })
  afterEach(async () => f.close())

  it('every list answers 400 naming the repeated parameter, not a type error about an array', async () => {
    const token = (await f.json('POST', '/v1/users/u1/tokens', { body: {} })).body.token as string
    const lists: [string, string?][] = [
      ['/v1/keys'], ['/v1/endpoints'], ['/v1/events'], ['/v1/deliveries'], ['/v1/subscriptions'], ['/v1/templates'],
      ['/v1/users/u1/preferences'], ['/v1/inbox', token],
    ]
    for (const [path, key] of lists) {
      const res = await f.json('GET', `${path}?limit=1&limit=2`, key ? { key } : {})
      expect(res, path).toMatchObject({ status: 400, body: { error: { code: 'validation_failed', details: [{ field: 'limit', message: 'given more than once; give limit once', in: 'query' }] } } })
    }
  })

  it('names each repeated filter and keeps the other problems; a single value still works', async () => {
    const res = await f.json('GET', '/v1/deliveries?status=pending&status=dead&event_type=a&event_type=a&limit=0')
    expect(res.status).toBe(400)
    expect(res.body.error.details).toEqual([
      { field: 'status', message: 'given more than once; give status once', in: 'query' },
      { field: 'event_type', message: 'given more than once; give event_type once', in: 'query' },
      { field: 'limit', message: expect.any(String), in: 'query' },
    ])
    expect((await f.json('GET', '/v1/deliveries?status=pending&limit=2')).status).toBe(200)
    // A parameter the route does not declare is refused, once or twice (docs/api.md).
    const unknown = await f.json('GET', '/v1/deliveries?unknown=1&unknown=2')
    expect([unknown.status, unknown.body.error.details[0].field]).toEqual([400, 'unknown'])
  })
})

describe('Content-Type is parsed as a media type (RFC 9110)', () => {
  let f: ApiFixture
  beforeEach(async () => {
    f = await apiFixture()
  })
  afterEach(async () => f.close())

  it.each(['application/json ; charset=utf-8', 'Application/JSON;Charset=UTF-8', 'application/json\t;charset=utf-8', ' application/json', 'application/vnd.api.v2+json', 'application/json;'])(
    '%j is JSON on validated routes and raw ones',
    async (type) => {
      const headers = { 'content-type': type }
      const ep = await f.json('POST', '/v1/endpoints', { raw: JSON.stringify({ url: 'http://127.0.0.1:9/h' }), headers })
      expect(ep.status, JSON.stringify(ep.body)).toBe(201)
      expect((await f.json('POST', '/v1/events', { raw: JSON.stringify({ type: 'a.b', data: {} }), headers })).status).toBe(202)
      expect((await f.json('POST', '/v1/events/batch', { raw: JSON.stringify({ events: [{ type: 'a.b', data: {} }] }), headers })).status).toBe(202)
      // An optional body, sent empty with the same type, still means "no fields".
      expect((await f.json('POST', `/v1/endpoints/${ep.body.id}/secret/rotate`, { raw: '', headers })).status).toBe(200)
    },
  )

  it.each(['application/jsonx', 'application/json-seq', 'text/json', 'application / json', 'application/x-json'])('%j is still 415', async (type) => {
    const res = await f.json('POST', '/v1/events', { raw: JSON.stringify({ type: 'a.b', data: {} }), headers: { 'content-type': type } })
    expect(res).toMatchObject({ status: 415, body: { error: { code: 'unsupported_media_type' } } })
  })
})
