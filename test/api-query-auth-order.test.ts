/**
 * Finding 6 of issue #36: an undeclared query parameter answered 400 before the credential's
 * role was checked, so a portal token learned 400 where it should learn 403. Now the role guard
 * runs first: 401, then 403, then 400. Both backends (api-*.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'

let f: ApiFixture
const creds: Record<string, string> = {}
beforeAll(async () => {
  f = await apiFixture()
  await f.json('POST', '/v1/apps', { body: { id: 'app-a', name: 'A' } })
  creds.admin = f.keys.admin
  creds.viewer = f.keys.viewer
  creds.publisher = f.keys.publisher
  creds.portal = (await f.json('POST', '/v1/apps/app-a/portal-tokens', { body: {} })).body.token
  creds.readOnly = (await f.json('POST', '/v1/apps/app-a/portal-tokens', { body: { read_only: true } })).body.token
  creds.user = (await f.json('POST', '/v1/users/u1/tokens', { body: {} })).body.token
})
afterAll(() => f.close())

describe('the role is checked before undeclared query parameters', () => {
  it.each([
    // [credential, method, path, status with a stray parameter]
    ['portal', 'GET', '/v1/requests', 403],
    ['readOnly', 'GET', '/v1/keys', 403],
    ['viewer', 'POST', '/v1/keys', 403],
    ['publisher', 'GET', '/v1/keys', 403],
    ['viewer', 'POST', '/v1/requests', 403],
    ['portal', 'GET', '/v1/users', 403],
    ['readOnly', 'POST', '/v1/endpoints', 403],
    ['admin', 'GET', '/v1/keys', 400],
    ['viewer', 'GET', '/v1/requests', 400],
    ['portal', 'GET', '/v1/endpoints', 400],
    ['user', 'GET', '/v1/inbox', 400],
  ] as const)('%s %s %s?bogus=1: %i', async (cred, method, path, status) => {
    const body = method === 'POST' ? { url: 'https://example.com/', role: 'viewer' } : undefined
    const r = await f.json(method, `${path}?bogus=1`, { key: creds[cred]!, ...(body ? { body } : {}) })
    expect(r.status).toBe(status)
    expect(r.body.error.code).toBe(status === 400 ? 'validation_failed' : 'forbidden')
    if (status === 400) expect(r.body.error.details).toMatchObject([{ field: 'bogus', in: 'query' }])
  })

  it('no credential is still 401 first', async () => {
    expect((await f.json('GET', '/v1/keys?bogus=1', { key: null })).status).toBe(401)
  })
})
