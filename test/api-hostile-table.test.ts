/**
 * The hostile-input table (test/support/hostile-cases.ts) against the real app: every route that
 * takes a schema, a template, markdown, a filter, a duration or a time, crossed with the hostile
 * values of its kind. Each answer is below 500 with the error contract, within HOSTILE_BOUND_MS,
 * and another tenant's probe sent alongside answers as before (within the bound, same data).
 * Both backends (api-*.test.ts). SECURITY.md lists the cases.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'
import { ROUTES, VALUES } from './support/hostile-cases.js'

/**
 * The bound on one hostile answer and on the probe beside it. Generous: the machines that run
 * this are shared and loaded; what it catches are the seconds-long stalls of the findings (8 s,
 * 19 s, stack overflows), not milliseconds.
 */
const HOSTILE_BOUND_MS = 5_000

let f: ApiFixture
let userToken = ''
let otherKey = ''
let otherEndpoint = ''

beforeAll(async () => {
  f = await apiFixture()
  await f.json('PUT', '/v1/users/u_hostile', { body: { email: 'h@example.com' } })
  userToken = (await f.json('POST', '/v1/users/u_hostile/tokens', { body: {} })).body.token
  // Another tenant: an application of its own, its endpoint, and a key scoped to it.
  await f.json('POST', '/v1/apps', { body: { id: 'other', name: 'Other' } })
  otherEndpoint = (await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/other', app_id: 'other' } })).body.id
  otherKey = (await f.json('POST', '/v1/keys', { body: { role: 'viewer', app_id: 'other' } })).body.key
  expect(typeof userToken).toBe('string')
  expect(typeof otherKey).toBe('string')
})
afterAll(() => f.close())

/** The other tenant's probe: its endpoint list, as it was. */
async function probeOther(): Promise<{ ms: number; ids: string[] }> {
  const t0 = performance.now()
  const r = await f.json('GET', '/v1/endpoints', { key: otherKey })
  expect(r.status).toBe(200)
  return { ms: performance.now() - t0, ids: r.body.data.map((e: { id: string }) => e.id) }
}

for (const route of ROUTES) {
  describe(route.name, () => {
    for (const v of VALUES[route.kind]) {
      it(`${route.kind}: ${v.name}`, async () => {
        const req = route.request(v.value)
        const key = route.auth === 'user' ? userToken : f.keys.admin
        const t0 = performance.now()
        // The probe is sent while the hostile request is being handled, on the same event loop.
        const [res, probe] = await Promise.all([
          f.call(req.method, req.path, { key, ...(req.body !== undefined ? { body: req.body } : {}) }).then(async (r) => ({ status: r.status, text: await r.text() })),
          probeOther(),
        ])
        const ms = performance.now() - t0
        const where = `${req.method} ${req.path.slice(0, 120)} → ${res.status} ${res.text.slice(0, 200)}`
        expect(res.status, where).toBeLessThan(500)
        if (res.status >= 400) expect(JSON.parse(res.text).error.code, where).toMatch(/^[a-z][a-z0-9_]*$/)
        expect(ms, `answered in ${Math.round(ms)} ms: ${where}`).toBeLessThan(HOSTILE_BOUND_MS)
        expect(probe.ms, `the other tenant waited ${Math.round(probe.ms)} ms`).toBeLessThan(HOSTILE_BOUND_MS)
        expect(probe.ids).toEqual([otherEndpoint])
      })
    }
  })
}
