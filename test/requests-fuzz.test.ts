import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AppError } from '../src/errors.js'
import { apiFixture, type ApiFixture } from './support/api.js'

/** Values that look like what each field takes, and what it must refuse. */
const anyOf = <T>(good: fc.Arbitrary<T>) => fc.oneof(good, fc.jsonValue({ maxDepth: 2 }), fc.constant(undefined))
const urlArb = fc.oneof(
  fc.webUrl(),
  fc.constantFrom('http://127.0.0.1:9/x', 'http://10.0.0.1/', 'http://[::1]/', 'http://[::ffff:10.0.0.1]/', 'http://0/', 'http://example.com:0/', 'file:///etc/passwd', 'http://u:p@example.com/', 'https://example.com/' + 'a'.repeat(3000), 'http://%zz/', 'http://[fe80::1%25eth0]/', ''),
  fc.string({ maxLength: 60 }),
)
const timeArb = fc.oneof(
  fc.date({ min: new Date(2000, 0, 1), max: new Date(2100, 0, 1), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom('2026-02-30T00:00:00Z', '2026-13-01T00:00:00Z', '9999-12-31T23:59:59Z', '2026-01-01T00:00:00+25:00', '2026-01-01', 'now'),
  fc.string({ maxLength: 30 }),
)
const delayArb = fc.oneof(fc.constantFrom('0', '30s', '2h', '30d', '31d', '1e9d', '99999999999999999999ms', '1.5h', '-1s', ' 5m '), fc.string({ maxLength: 12 }))
const requestArb = fc.record(
  {
    url: urlArb,
    method: anyOf(fc.constantFrom('POST', 'PUT', 'PATCH', 'DELETE', 'GET', 'get', 'CONNECT', 'TRACE')),
    headers: anyOf(fc.dictionary(fc.oneof(fc.constantFrom('content-type', 'Content-Type', 'postbox-attempt', 'host', 'x-ok', 'bad name', ''), fc.string({ maxLength: 10 })), fc.string({ maxLength: 20 }), { maxKeys: 4 })),
    body: anyOf(fc.string({ maxLength: 50 })),
    dedup_key: anyOf(fc.string({ maxLength: 10 })),
    source: anyOf(fc.string({ maxLength: 10 })),
    ref_id: anyOf(fc.string({ maxLength: 10 })),
    timeout_ms: anyOf(fc.integer({ min: -10, max: 100_000 })),
    retry_schedule: anyOf(fc.array(fc.oneof(fc.integer({ min: -5, max: 100_000_000 }), delayArb), { maxLength: 4 })),
    signing_secret: anyOf(fc.constantFrom('whsec_' + Buffer.alloc(32, 1).toString('base64'), 'whsec_', 'whsec_AAAA', 'x')),
    deliver_at: anyOf(timeArb),
    delay: anyOf(delayArb),
    app_id: anyOf(fc.constantFrom('default', 'shop', 'a b', 'x'.repeat(101))),
  },
  { requiredKeys: [] },
)

describe('requests fuzz: hostile input never yields a 5xx', () => {
  let f: ApiFixture
  beforeAll(async () => {
    f = await apiFixture()
  })
  afterAll(async () => f.close())

  it('POST /v1/requests and delayed events answer < 500 with an error code on every 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(requestArb, fc.boolean(), async (input, asEvent) => {
        const body = asEvent ? { type: 'fuzz.t', data: {}, ...(input.deliver_at !== undefined ? { deliver_at: input.deliver_at } : {}), ...(input.delay !== undefined ? { delay: input.delay } : {}) } : input
        const r = await f.json('POST', asEvent ? '/v1/events' : '/v1/requests', { key: f.keys.publisher, body })
        expect(r.status, JSON.stringify([body, r.body])).toBeLessThan(500)
        if (r.status >= 400) expect(typeof r.body.error?.code).toBe('string')
        else if (!asEvent) {
          // Accepted: it reads back, and every id route answers < 500.
          const id = r.body.id as string
          for (const [method, path] of [['GET', `/v1/requests/${id}`], ['POST', `/v1/requests/${id}/redeliver`], ['DELETE', `/v1/requests/${id}`]] as const) {
            const x = await f.json(method, path)
            expect(x.status, `${method} ${path}`).toBeLessThan(500)
          }
        }
      }),
      { numRuns: 400, seed: 20261201 },
    )
  })

  it('the list and id routes answer < 500 for any query and id', async () => {
    const q = fc.array(fc.tuple(fc.constantFrom('status', 'source', 'ref_id', 'app_id', 'limit', 'cursor', 'x'), fc.oneof(fc.constantFrom('pending', 'dead', '0', '201', 'cmVxXzAw', ''), fc.string({ maxLength: 20 }))), { maxLength: 4 })
    await fc.assert(
      fc.asyncProperty(q, fc.oneof(fc.constantFrom('req_00000000000000000000000000', 'dlv_00000000000000000000000000', 'req_', '%00', 'a'.repeat(300)), fc.string({ maxLength: 30 }).map(encodeURIComponent)), async (pairs, id) => {
        const qs = pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')
        for (const [method, path] of [['GET', `/v1/requests?${qs}`], ['GET', `/v1/requests/${id}`], ['DELETE', `/v1/requests/${id}`], ['POST', `/v1/requests/${id}/redeliver`]] as const) {
          const r = await f.json(method, path)
          expect(r.status, `${method} ${path}`).toBeLessThan(500)
          if (r.status >= 400) expect(typeof r.body.error?.code).toBe('string')
        }
      }),
      { numRuns: 300, seed: 20261202 },
    )
  })

  it('the library refuses bad input with an AppError below 500, never another error', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(requestArb, fc.anything()), async (input) => {
        try {
          await f.pb.requests.create(input)
        } catch (err) {
          expect(err).toBeInstanceOf(AppError)
          expect((err as AppError).status).toBeLessThan(500)
        }
      }),
      { numRuns: 400, seed: 20261203 },
    )
  })
})
