/**
 * Finding 7 of issue #36 (the input items): `deliver_at: "2026-02-30T00:00:00Z"` was accepted and
 * rolled over to March 2; `delay: "10 m"` and `delay: "0"` were accepted; a request URL
 * `http:///x` was accepted and stored as `http://x/`. Each is now 400 `validation_failed` naming
 * its field. Both backends (requests*.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'

let f: ApiFixture
beforeAll(async () => {
  f = await apiFixture()
})
afterAll(() => f.close())

const URL_OK = 'https://example.com/hook'

describe('durable requests and delayed events refuse what would be misread', () => {
  it.each([
    ['deliver_at', { deliver_at: '2026-02-30T00:00:00Z' }],
    ['deliver_at', { deliver_at: '2026-04-31T10:00:00Z' }],
    ['deliver_at', { deliver_at: '2026-01-01T24:00:00Z' }],
    ['delay', { delay: '10 m' }],
    ['delay', { delay: '0' }],
    ['delay', { delay: '5' }],
    ['delay', { delay: ' 5s' }],
    ['retry_schedule.0', { retry_schedule: ['1 s'] }],
    ['url', { url: 'http:///x' }],
    ['url', { url: 'http:x' }],
    ['url', { url: 'http:\\\\x/' }],
    ['url', { url: 'http://x/a b' }],
    ['url', { url: 'http://exa\tmple.com/' }],
  ])('POST /v1/requests refuses %s: %j', async (field, patch) => {
    const r = await f.json('POST', '/v1/requests', { body: { url: URL_OK, ...patch } })
    expect(r.status).toBe(400)
    expect(r.body.error.code).toBe('validation_failed')
    expect(r.body.error.details.map((d: { field: string }) => d.field)).toContain(field)
  })

  it.each([{ delay: '0s' }, { delay: '1.5h' }, { delay: '250ms' }])('POST /v1/requests takes %j', async (patch) => {
    expect((await f.json('POST', '/v1/requests', { body: { url: URL_OK, ...patch } })).status).toBe(202)
  })

  it.each([
    ['deliver_at', { deliver_at: '2026-02-30T00:00:00Z' }],
    ['delay', { delay: '10 m' }],
    ['delay', { delay: '0' }],
  ])('POST /v1/events refuses %s: %j', async (field, patch) => {
    const r = await f.json('POST', '/v1/events', { body: { type: 'order.paid', data: {}, ...patch } })
    expect(r.status).toBe(400)
    expect(r.body.error.details.map((d: { field: string }) => d.field)).toContain(field)
  })

  it('POST /v1/endpoints refuses http:///x too, and stores nothing', async () => {
    const r = await f.json('POST', '/v1/endpoints', { body: { url: 'http:///x' } })
    expect(r).toMatchObject({ status: 400, body: { error: { code: 'validation_failed' } } })
    expect((await f.json('GET', '/v1/endpoints')).body.data).toEqual([])
  })
})
