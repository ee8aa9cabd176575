import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'

/** The routes of applications, portal tokens and the catalog, and the app-aware routes they touch. */
const ROUTES = [
  ['POST', '/v1/apps'], ['GET', '/v1/apps'], ['GET', '/v1/apps/{id}'], ['PATCH', '/v1/apps/{id}'], ['DELETE', '/v1/apps/{id}'],
  ['POST', '/v1/apps/{id}/portal-tokens'], ['PUT', '/v1/event-types/{id}'], ['GET', '/v1/event-types'], ['GET', '/v1/event-types/{id}'],
  ['POST', '/v1/keys'], ['POST', '/v1/endpoints'], ['GET', '/v1/endpoints'], ['POST', '/v1/events'], ['POST', '/v1/events/batch'],
  ['GET', '/v1/events'], ['GET', '/v1/deliveries'], ['POST', '/v1/endpoints/{id}/test'],
] as const

/** Hostile JSON Schemas: wrong keyword types, unresolvable refs, huge numbers, recursion. */
const schemaArb = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(
    { type: 'nope' }, { $ref: '#/x' }, { $ref: 'http://example.com/s.json' }, { pattern: '(' }, { minimum: 'a' }, { $id: 'dup', type: 'object' },
    { $defs: { a: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' }, { format: 'no-such-format' }, true, false, { required: [1] }, { properties: { a: { type: 'string', maxLength: -1 } } },
  ),
)

const bodyArb = fc.oneof(
  fc.constant(undefined),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.record({
    id: fc.oneof(fc.string({ maxLength: 120 }), fc.constantFrom('default', 'acme', 'a'.repeat(101), 'a b', '')),
    name: fc.oneof(fc.string({ maxLength: 210 }), fc.integer()),
    metadata: fc.oneof(fc.object(), fc.jsonValue()),
  }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
  fc.record({
    schema: schemaArb,
    example: fc.oneof(fc.object(), fc.jsonValue()),
    description: fc.oneof(fc.string(), fc.integer()),
    deprecated: fc.oneof(fc.boolean(), fc.string()),
    archived: fc.oneof(fc.boolean(), fc.string()),
  }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
  fc.record({
    ttl_seconds: fc.oneof(fc.integer(), fc.double(), fc.string()),
    read_only: fc.oneof(fc.boolean(), fc.string()),
    app_id: fc.oneof(fc.string({ maxLength: 120 }), fc.constantFrom('acme', 'nope', 'default')),
    role: fc.constantFrom('admin', 'viewer', 'publisher', 'root'),
    type: fc.constantFrom('fz.typed', 'fz.other', 'postbox.ping', ''),
    data: fc.oneof(fc.object(), fc.jsonValue()),
    url: fc.constantFrom('http://127.0.0.1:9/x', 'ftp://x', ''),
    event_type: fc.constantFrom('fz.typed', 'fz.none', '*'),
    event_types: fc.array(fc.constantFrom('fz.typed', 'fz.*', '*', 'zz', '')),
  }, { requiredKeys: [] }).map((v) => JSON.stringify({ ...v, events: [v, v] })),
)

const segmentArb = fc.oneof(fc.constantFrom('acme', 'default', 'nope', 'fz.typed', 'ep_x', '%00', 'a'.repeat(300), '..'), fc.string({ maxLength: 30 }).map(encodeURIComponent))
const queryArb = fc
  .array(fc.tuple(fc.constantFrom('app_id', 'include_archived', 'limit', 'cursor', 'type'), fc.oneof(fc.constantFrom('acme', 'nope', 'true', 'TRUE', '1', '0', 'YXBwLzEvYQ'), fc.string({ maxLength: 20 }))), { maxLength: 3 })
  .map((pairs) => pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&'))

describe('fast-check over the application and catalog routes: no 5xx', () => {
  let f: ApiFixture
  const creds: string[] = []
  beforeAll(async () => {
    f = await apiFixture()
    await f.json('POST', '/v1/apps', { body: { id: 'acme', name: 'Acme' } })
    await f.json('PUT', '/v1/event-types/fz.typed', { body: { schema: { type: 'object', required: ['a'] }, example: { a: 1 } } })
    creds.push(f.keys.admin, f.keys.viewer, f.keys.publisher)
    creds.push((await f.json('POST', '/v1/keys', { body: { role: 'admin', app_id: 'acme' } })).body.key)
    creds.push((await f.json('POST', '/v1/apps/acme/portal-tokens', { body: {} })).body.token)
    creds.push((await f.json('POST', '/v1/apps/acme/portal-tokens', { body: { read_only: true } })).body.token)
    creds.push('ptk_e30.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'ptk_', 'ptk_x.y.z')
  })
  afterAll(async () => f.close())

  it('answers every request below 500, with an error code on every 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.nat(), segmentArb, queryArb, bodyArb, async (pick, who, segment, query, body) => {
        const [method, template] = ROUTES[pick % ROUTES.length]!
        const path = template.replace('{id}', segment) + (query ? `?${query}` : '')
        const headers: Record<string, string> = { authorization: `Bearer ${creds[who % creds.length]}`, 'content-type': 'application/json' }
        const res = await f.pb.app.request(path, { method, headers, body: method === 'GET' ? undefined : body })
        const text = await res.text()
        expect(res.status, `${method} ${path} ${body} → ${text}`).toBeLessThan(500)
        if (res.status >= 400) expect(typeof (JSON.parse(text) as { error?: { code?: unknown } }).error?.code).toBe('string')
      }),
      { numRuns: 800, seed: 20261201 },
    )
  })
})
