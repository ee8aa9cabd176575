import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'

interface Route {
  method: string
  path: string
}

const deep = (n: number) => `{"type":"a","data":{"x":${'['.repeat(n)}${']'.repeat(n)}}}`

/** Hostile bodies: random JSON, broken JSON, wrong types, deep nesting, odd unicode, near-limit sizes. */
const bodyArb: fc.Arbitrary<string | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.json({ maxDepth: 4 }),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify({ type: 'fuzz.t', data: v, events: [v], url: v, role: v, id: v })),
  fc.record({
    type: fc.oneof(fc.string(), fc.constant('a.b')),
    data: fc.oneof(fc.object(), fc.jsonValue()),
    id: fc.option(fc.string({ maxLength: 300 }), { nil: undefined }),
    ordering_key: fc.option(fc.string(), { nil: undefined }),
  }).map((v) => JSON.stringify(v)),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.constantFrom('', '{', '[]', 'null', '"str"', '1e999', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}', deep(70), deep(20_000), '\u0000', '{"url":"http://[::1]/","since":"yesterday"}'),
  fc.record({ url: fc.webUrl(), event_types: fc.array(fc.string()), headers: fc.dictionary(fc.string(), fc.string()) }).map((v) => JSON.stringify(v)),
)

const contentTypeArb = fc.oneof(
  fc.constantFrom('application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/vnd.api+json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', ''),
  fc.string({ maxLength: 40 }),
)

const segmentArb = fc.oneof(
  fc.constantFrom('ep_x', 'evt_x', 'dlv_x', 'key_x', '..', '%2e%2e', '%00', 'a'.repeat(300), '%E0%A4%A', "';DROP TABLE events;--", '*'),
  fc.string({ maxLength: 30 }).map((s) => encodeURIComponent(s)),
)

const queryArb = fc
  .array(
    fc.tuple(
      fc.constantFrom('limit', 'cursor', 'status', 'endpoint_id', 'event_type', 'topic', 'archived', 'since', 'token', 'x'),
      fc.oneof(fc.constantFrom('0', '-1', '201', '1e3', 'NaN', '50', 'pending', '!!', '%', 'AAAA', 'true'), fc.string({ maxLength: 30 })),
    ),
    { maxLength: 4 },
  )
  .map((pairs) => pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&'))

describe('API fuzz: hostile input never yields a 5xx', () => {
  let f: ApiFixture
  let routes: Route[]

  beforeAll(async () => {
    f = await apiFixture()
    const doc = (await (await f.call('GET', '/openapi.json', { key: null })).json()) as { paths: Record<string, Record<string, unknown>> }
    routes = []
    for (const [path, ops] of Object.entries(doc.paths)) {
      if (path.includes('stream')) continue // a valid stream never ends; its auth is fuzzed via the other inbox routes
      for (const method of Object.keys(ops)) routes.push({ method: method.toUpperCase(), path })
    }
    routes.push({ method: 'GET', path: '/v1/unknown/{id}' }, { method: 'PUT', path: '/v1/events' }, { method: 'POST', path: '/healthz' })
    expect(routes.length).toBeGreaterThan(15)
  })
  afterAll(async () => f.close())

  it('answers every fuzzed request with < 500, and every 4xx with an error code', async () => {
    const authArb = fc.oneof(
      fc.constantFrom(f.keys.admin, f.keys.publisher, f.keys.viewer).map((k) => `Bearer ${k}`),
      fc.constantFrom(undefined, '', 'Bearer', 'Bearer ', 'bearer pbk_', `Basic ${Buffer.from('a:b').toString('base64')}`, `Bearer ${f.keys.admin}x`, 'Bearer pbu_x.y'),
      fc.string({ maxLength: 60 }).map((s) => `Bearer ${s}`),
    )
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 10_000 }),
        segmentArb,
        queryArb,
        bodyArb,
        contentTypeArb,
        authArb,
        fc.option(fc.string({ maxLength: 250 }), { nil: undefined }),
        async (pick, segment, query, body, contentType, auth, idem) => {
          const route = routes[pick % routes.length]!
          const path = route.path.replace(/\{[^}]+\}/g, segment) + (query ? `?${query}` : '')
          const headers: Record<string, string> = {}
          if (auth !== undefined) headers.authorization = auth
          if (contentType) headers['content-type'] = contentType
          if (idem !== undefined && /^[\x20-\x7e]*$/.test(idem)) headers['idempotency-key'] = idem
          const send = route.method === 'GET' || route.method === 'HEAD' ? undefined : body
          let res: Response
          try {
            res = await f.pb.app.request(path, { method: route.method, headers, body: send })
          } catch (err) {
            // only the Request constructor may refuse (e.g. an invalid URL); the app never throws
            expect(String(err)).toMatch(/Invalid URL|Request/)
            return
          }
          const text = await res.text()
          expect(res.status, `${route.method} ${path} ${text}`).toBeLessThan(500)
          if (res.status >= 400) {
            const parsed = JSON.parse(text) as { error?: { code?: unknown } }
            expect(typeof parsed.error?.code, `${route.method} ${path} ${text}`).toBe('string')
          }
        },
      ),
      { numRuns: 1500, seed: 20261130 },
    )
  })

  it('refuses JSON nested deeper than 64 levels with validation_failed', async () => {
    const res = await f.json('POST', '/v1/events', { raw: deep(70), headers: { 'content-type': 'application/json' } })
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'validation_failed' } } })
    const ok = await f.json('POST', '/v1/events', { raw: deep(20), headers: { 'content-type': 'application/json' } })
    expect(ok.status).toBe(202)
  })
})
