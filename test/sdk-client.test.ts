import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPostboxClient, PostboxApiError, unwrap } from '../sdk/client/index.js'
import { renderClientTypes, SCHEMA_FILE, servedOpenApiDocument } from '../scripts/gen-client.js'
import { apiFixture, type ApiFixture } from './support/api.js'

/** The typed client: its committed types match what the app serves, and it talks to the real app. */

describe('generated client types', () => {
  it('sdk/client/schema.d.ts is what `npm run gen:client` makes of the served /openapi.json', async () => {
    const fresh = await renderClientTypes(await servedOpenApiDocument())
    const committed = readFileSync(SCHEMA_FILE, 'utf8')
    // On failure: run `npm run gen:client` and commit sdk/client/schema.d.ts.
    expect(committed === fresh, 'sdk/client/schema.d.ts is stale: run `npm run gen:client`').toBe(true)
  })

  it('generation is deterministic (the same document gives the same text)', async () => {
    const doc = await servedOpenApiDocument()
    expect(await renderClientTypes(doc)).toBe(await renderClientTypes(doc))
  })
})

describe('createPostboxClient against the real app', () => {
  let f: ApiFixture
  const appFetch = (req: Request): Promise<Response> => Promise.resolve(f.pb.app.fetch(req))
  beforeAll(async () => {
    f = await apiFixture()
  })
  afterAll(async () => f?.close())

  it('sends the bearer token and types the answers', async () => {
    const admin = createPostboxClient({ baseUrl: 'http://postbox.test/', token: f.keys.admin, fetch: appFetch })
    const created = await unwrap(admin.PUT('/v1/users/{id}', { params: { path: { id: 'u_c' } }, body: { name: 'Client' } }))
    expect(created.id).toBe('u_c')
    const { token } = await unwrap(admin.POST('/v1/users/{id}/tokens', { params: { path: { id: 'u_c' } }, body: {} }))
    await unwrap(admin.POST('/v1/notifications', { body: { topic: 'client.test', recipients: ['user:u_c'], title: 'Hello' } }))

    const user = createPostboxClient({ baseUrl: 'http://postbox.test', token, fetch: appFetch })
    const page = await unwrap(user.GET('/v1/inbox', { params: { query: { status: 'unread' } } }))
    expect(page.unread_count).toBe(1)
    expect(page.data[0]?.title).toBe('Hello')
    const done = await unwrap(user.POST('/v1/inbox/read', { body: { ids: [page.data[0]!.id] } }))
    expect(done.updated).toBe(1)
    expect((await unwrap(user.GET('/v1/inbox/unread-count'))).unread_count).toBe(0)
  })

  it('unwrap throws PostboxApiError with the stable code', async () => {
    const anon = createPostboxClient({ baseUrl: 'http://postbox.test', fetch: appFetch })
    const err = await unwrap(anon.GET('/v1/keys')).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(PostboxApiError)
    expect(err).toMatchObject({ status: 401, code: 'unauthorized' })
    const bad = createPostboxClient({ baseUrl: 'http://postbox.test', token: 'pbu_nope', fetch: appFetch })
    await expect(unwrap(bad.GET('/v1/inbox'))).rejects.toMatchObject({ status: 401, code: 'invalid_token' })
  })
})
