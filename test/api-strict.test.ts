import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'

let f: ApiFixture
let userToken: string
beforeAll(async () => {
  f = await apiFixture()
  await f.json('PUT', '/v1/users/u1', { body: {} })
  userToken = (await f.json('POST', '/v1/users/u1/tokens', { body: {} })).body.token
})
afterAll(async () => {
  await f.close()
})

/** The query-parameter names of every operation in the OpenAPI document, by `METHOD path`. */
async function operations(): Promise<{ method: string; path: string; query: string[] }[]> {
  const doc = (await f.json('GET', '/openapi.json')).body as {
    paths: Record<string, Record<string, { parameters?: { in: string; name: string }[] }>>
  }
  const out: { method: string; path: string; query: string[] }[] = []
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      out.push({ method: method.toUpperCase(), path, query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name) })
    }
  }
  return out
}

describe('unknown query parameters', () => {
  it.each([
    ['a misspelt filter', '/v1/deliveries?staus=dead', 'staus'],
    ['an unsupported filter', '/v1/events?created_after=2026-01-01T00:00:00Z', 'created_after'],
    ['a parameter of another route', '/v1/endpoints?status=dead', 'status'],
    ['any parameter on a route without one', '/v1/endpoints/ep_x/secret?verbose=1', 'verbose'],
  ])('refuses %s with 400 validation_failed naming it', async (_name, path, field) => {
    const r = await f.json('GET', path)
    expect(r.status).toBe(400)
    expect(r.body.error.code).toBe('validation_failed')
    expect(r.body.error.details).toEqual([expect.objectContaining({ field, in: 'query' })])
  })

  it('refuses an undeclared parameter on every route of the OpenAPI document', async () => {
    const ops = await operations()
    expect(ops.length).toBeGreaterThan(30)
    for (const op of ops) {
      const path = op.path.replace(/\{[^}]+\}/g, 'x_1')
      const key = path.startsWith('/v1/inbox') ? userToken : undefined
      const r = await f.json(op.method, `${path}?zz_unknown=1`, op.method === 'GET' || op.method === 'DELETE' ? { key } : { key, body: {} })
      expect([op.method, op.path, r.status, r.body?.error?.details]).toEqual([op.method, op.path, 400, [expect.objectContaining({ field: 'zz_unknown' })]])
    }
  })

  it('refuses wildcards in the exact event-type filters', async () => {
    for (const path of ['/v1/events?type=order.*', '/v1/deliveries?event_type=order.*']) {
      const r = await f.json('GET', path)
      expect([path, r.status, r.body.error.details[0].field]).toEqual([path, 400, path.includes('event_type') ? 'event_type' : 'type'])
    }
  })
})

describe('numbers in query strings', () => {
  it.each(['0x10', '1e2', '+5', ' 5', '5.0', '', '-1', '1_0'])('refuses limit=%j', async (v) => {
    for (const path of ['/v1/deliveries', '/v1/events', '/v1/endpoints', '/v1/keys', '/v1/templates']) {
      const r = await f.json('GET', `${path}?limit=${encodeURIComponent(v)}`)
      expect([path, r.status, r.body.error.code, r.body.error.details[0].field]).toEqual([path, 400, 'validation_failed', 'limit'])
    }
  })

  it('accepts plain decimal', async () => {
    const r = await f.json('GET', '/v1/deliveries?limit=16')
    expect(r.status).toBe(200)
    expect((await f.json('GET', '/v1/endpoints?limit=200')).status).toBe(200)
  })
})

describe('wrong method', () => {
  it('is 405 method_not_allowed with an Allow header', async () => {
    const res = await f.call('PUT', '/v1/events')
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST')
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('method_not_allowed')
    const one = await f.call('DELETE', '/v1/endpoints/ep_x/secret')
    expect([one.status, one.headers.get('allow')]).toEqual([405, 'GET, HEAD'])
    const health = await f.call('POST', '/healthz', { key: null })
    expect([health.status, health.headers.get('allow')]).toEqual([405, 'GET, HEAD'])
  })

  it('stays 404 for a path no route has', async () => {
    const r = await f.json('GET', '/v1/nothing-here')
    expect([r.status, r.body.error.code]).toEqual([404, 'not_found'])
  })
})
