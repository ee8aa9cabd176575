import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'

/**
 * `Idempotency-Key` (README "Choices"): POST /v1/events and POST /v1/notifications take it as
 * their body's own dedup field (`id`, `dedup_key`); POST /v1/events/batch refuses it (each event
 * has its own `id`); other POSTs ignore it, as SDKs that send it on every POST expect.
 */

const note = (extra: Record<string, unknown> = {}) => ({ topic: 'order.shipped', recipients: ['user:u1'], title: 'Shipped', ...extra })

describe('POST /v1/notifications honours Idempotency-Key as POST /v1/events does', () => {
  let f: ApiFixture
  beforeEach(async () => {
    f = await apiFixture()
  })
  afterEach(async () => f.close())

  const send = (body: Record<string, unknown>, key?: string) =>
    f.json('POST', '/v1/notifications', { key: f.keys.publisher, body, ...(key === undefined ? {} : { headers: { 'idempotency-key': key } }) })

  it('the header is the dedup_key: a repeat answers 202 (docs/notifications-basics.md) with the original, deduplicated, and delivers nothing twice', async () => {
    const first = await send(note(), 'ship-1')
    const again = await send(note({ title: 'changed' }), 'ship-1')
    expect(first).toMatchObject({ status: 202, body: { deduplicated: false, deliveries: 1 } })
    expect(again).toEqual({ status: 202, body: { ...first.body, deduplicated: true } })
    const stored = await f.json('GET', `/v1/notifications/${first.body.id}`)
    expect(stored.body).toMatchObject({ dedup_key: 'ship-1' })
    expect((await f.pb.inbox('u1').list()).data.map((m) => m.title)).toEqual(['Shipped'])
    // The header and the body field name the same key.
    expect(await send(note({ dedup_key: 'ship-1' }))).toMatchObject({ status: 202, body: { id: first.body.id, deduplicated: true } })
  })

  it('a repeated body dedup_key is 202 too, with deduplicated: true', async () => {
    const first = await send(note({ dedup_key: 'd-1' }))
    const again = await send(note({ dedup_key: 'd-1' }))
    expect([first.status, again.status]).toEqual([202, 202])
    expect(again.body).toMatchObject({ id: first.body.id, deduplicated: true })
  })

  it('the same value in the header and the body is one key; different values are 400 naming dedup_key', async () => {
    const both = await send(note({ dedup_key: 'k-1' }), 'k-1')
    expect(both).toMatchObject({ status: 202, body: { deduplicated: false } })
    expect((await f.json('GET', `/v1/notifications/${both.body.id}`)).body.dedup_key).toBe('k-1')
    const clash = await send(note({ dedup_key: 'k-2' }), 'k-3')
    expect(clash).toMatchObject({ status: 400, body: { error: { code: 'validation_failed', details: [{ field: 'dedup_key', in: 'body' }] } } })
    expect((await f.pb.inbox('u1').list()).data).toHaveLength(1)
  })

  it('an Idempotency-Key that is not printable ASCII is 400 naming the header', async () => {
    const res = await send(note(), 'has space')
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'validation_failed', details: [{ field: 'idempotency-key', in: 'header' }] } } })
  })
})

describe('Idempotency-Key on the other POSTs', () => {
  let f: ApiFixture
  beforeEach(async () => {
    f = await apiFixture()
  })
  afterEach(async () => f.close())

  const headers = { 'idempotency-key': 'retry-1' }
  const refused = (res: { status: number; body: unknown }, path: string) =>
    expect(res, path).toMatchObject({
      status: 400,
      body: { error: { code: 'validation_failed', details: [{ field: 'idempotency-key', in: 'header', message: expect.stringContaining(`POST ${path}`) }] } },
    })

  it('POST /v1/events/batch points at the per-event id, and stores nothing', async () => {
    const res = await f.json('POST', '/v1/events/batch', { key: f.keys.publisher, headers, body: { events: [{ type: 'a.b', data: {} }] } })
    refused(res, '/v1/events/batch')
    expect(res.body.error.details[0].message).toContain('own `id`')
    expect((await f.json('GET', '/v1/events')).body.data).toEqual([])
  })

  it('admin and user POSTs (keys, endpoints, endpoint actions, tokens, inbox) ignore it and work as without it', async () => {
    const ep = (await f.json('POST', '/v1/endpoints', { body: { url: 'http://127.0.0.1:9/h' } })).body
    const token = (await f.json('POST', '/v1/users/u1/tokens', { body: {} })).body.token as string
    const cases: [string, unknown, number, string?][] = [
      ['/v1/keys', { name: 'k', role: 'viewer' }, 201],
      ['/v1/endpoints', { url: 'http://127.0.0.1:9/other' }, 201],
      [`/v1/endpoints/${ep.id}/enable`, {}, 200],
      [`/v1/endpoints/${ep.id}/secret/rotate`, {}, 200],
      ['/v1/deliveries/dlv_x/redeliver', {}, 404],
      ['/v1/users/u1/tokens', {}, 201],
      ['/v1/inbox/read-all', {}, 200, token],
    ]
    for (const [path, body, status, key] of cases) {
      expect([path, (await f.json('POST', path, { headers, body, ...(key ? { key } : {}) })).status]).toEqual([path, status])
    }
    expect((await f.json('GET', '/v1/keys')).body.data).toHaveLength(4)
    expect((await f.json('GET', '/v1/endpoints')).body.data).toHaveLength(2)
    expect((await f.json('GET', `/v1/endpoints/${ep.id}/secret`)).body.secret).not.toBe(ep.secret)
  })

  it('PUT, PATCH and DELETE (idempotent already) and the two honouring routes accept it; an unknown route stays 404', async () => {
    expect((await f.json('PUT', '/v1/users/u2', { headers, body: { name: 'U' } })).status).toBe(201)
    const ep = (await f.json('POST', '/v1/endpoints', { body: { url: 'http://127.0.0.1:9/h' } })).body
    expect((await f.json('PATCH', `/v1/endpoints/${ep.id}`, { headers, body: { description: 'd' } })).status).toBe(200)
    expect((await f.json('DELETE', `/v1/endpoints/${ep.id}`, { headers })).status).toBe(200)
    expect((await f.json('POST', '/v1/events', { headers, body: { type: 'a.b', data: {} } })).status).toBe(202)
    expect((await f.json('POST', '/v1/notifications', { headers, body: note() })).status).toBe(202)
    expect((await f.json('POST', '/v1/nothing-here', { headers, body: {} })).body.error.code).toBe('not_found')
  })
})
