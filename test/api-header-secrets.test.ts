/**
 * Finding 4 of issue #36: custom header values (an upstream `Authorization`) are secrets. After
 * create they are shown only to the callers who may read signing secrets (admin keys, portal
 * tokens); every other caller sees the names with masked values (docs/delivery.md). Both backends.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { MASKED_HEADER_VALUE } from '../src/webhooks/present.js'
import { apiFixture, type ApiFixture } from './support/api.js'

let f: ApiFixture | null = null
afterEach(async () => {
  await f?.close()
  f = null
})

const SECRET_HEADERS = { authorization: 'Bearer upstream-secret-123', 'x-api-key': 'k-456' }
const MASKED = { authorization: MASKED_HEADER_VALUE, 'x-api-key': MASKED_HEADER_VALUE }

describe('custom header values are masked to readers', () => {
  it('GET /v1/requests and /v1/requests/:id: values to admin keys only', async () => {
    f = await apiFixture()
    const r = await f.json('POST', '/v1/requests', { key: f.keys.publisher, body: { url: 'https://example.com/x', delay: '1h', headers: SECRET_HEADERS } })
    expect(r.status).toBe(202)
    for (const key of [f.keys.viewer, f.keys.publisher]) {
      const one = await f.json('GET', `/v1/requests/${r.body.id}`, { key })
      expect(one.body.headers).toEqual(MASKED)
      const list = await f.json('GET', '/v1/requests', { key })
      expect(list.body.data[0].headers).toEqual(MASKED)
      expect(JSON.stringify([one.body, list.body])).not.toContain('upstream-secret-123')
    }
    const cancelled = await f.json('DELETE', `/v1/requests/${r.body.id}`, { key: f.keys.publisher })
    expect(cancelled).toMatchObject({ status: 200, body: { status: 'cancelled', headers: MASKED } })
    expect((await f.json('GET', `/v1/requests/${r.body.id}`)).body.headers).toEqual(SECRET_HEADERS)
    expect((await f.json('GET', '/v1/requests')).body.data[0].headers).toEqual(SECRET_HEADERS)
  })

  it('GET /v1/endpoints and /v1/endpoints/:id: values to admins and portal tokens, masked to viewers', async () => {
    f = await apiFixture()
    await f.json('POST', '/v1/apps', { body: { id: 'app-a', name: 'A' } })
    const ep = await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/hook', headers: SECRET_HEADERS, app_id: 'app-a' } })
    expect(ep).toMatchObject({ status: 201, body: { headers: SECRET_HEADERS } })
    const viewerOne = await f.json('GET', `/v1/endpoints/${ep.body.id}`, { key: f.keys.viewer })
    expect(viewerOne.body.headers).toEqual(MASKED)
    expect((await f.json('GET', '/v1/endpoints', { key: f.keys.viewer })).body.data[0].headers).toEqual(MASKED)
    const scopedViewer = (await f.json('POST', '/v1/keys', { body: { role: 'viewer', app_id: 'app-a' } })).body.key as string
    expect((await f.json('GET', `/v1/endpoints/${ep.body.id}`, { key: scopedViewer })).body.headers).toEqual(MASKED)
    const portal = (await f.json('POST', '/v1/apps/app-a/portal-tokens', { body: { read_only: true } })).body.token as string
    expect((await f.json('GET', `/v1/endpoints/${ep.body.id}`, { key: portal })).body.headers).toEqual(SECRET_HEADERS)
    expect((await f.json('GET', `/v1/endpoints/${ep.body.id}`)).body.headers).toEqual(SECRET_HEADERS)
  })
})
