import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'

describe('/v1/endpoints', () => {
  let f: ApiFixture
  beforeEach(async () => {
    f = await apiFixture()
  })
  afterEach(async () => f.close())

  const create = async (body: Record<string, unknown> = {}) =>
    (await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/hook', ...body } })).body

  it('creates with a secret shown on create, reads with health and without the secret', async () => {
    const res = await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/hook', event_types: ['user.*'], description: 'd' } })
    expect(res.status).toBe(201)
    expect(res.body.secret).toMatch(/^whsec_/)
    expect(res.body).toMatchObject({ url: 'https://example.com/hook', event_types: ['user.*'], disabled: false, circuit: 'closed', consecutive_failures: 0 })
    const got = await f.json('GET', `/v1/endpoints/${res.body.id}`, { key: f.keys.viewer })
    expect(got.status).toBe(200)
    expect(got.body.secret).toBeUndefined()
    expect(got.body).toHaveProperty('last_success_at', null)
    expect(got.body).toHaveProperty('disabled_reason', null)
    const secret = await f.json('GET', `/v1/endpoints/${res.body.id}/secret`)
    expect(secret).toEqual({ status: 200, body: { secret: res.body.secret } })
  })

  it('updates, rotates, enables, tests, recovers and deletes', async () => {
    const ep = await create()
    const patched = await f.json('PATCH', `/v1/endpoints/${ep.id}`, { body: { description: 'new', disabled: true } })
    expect(patched).toMatchObject({ status: 200, body: { description: 'new', disabled: true } })
    // The body is optional: an empty PATCH (with or without a JSON content type) changes nothing.
    expect(await f.json('PATCH', `/v1/endpoints/${ep.id}`)).toMatchObject({ status: 200, body: { description: 'new' } })
    expect(await f.json('PATCH', `/v1/endpoints/${ep.id}`, { raw: '', headers: { 'content-type': 'application/json' } })).toMatchObject({ status: 200 })
    expect((await f.json('PATCH', `/v1/endpoints/${ep.id}`, { body: { timeout_ms: 5 } })).status).toBe(400)
    const rotated = await f.json('POST', `/v1/endpoints/${ep.id}/secret/rotate`, { raw: '', headers: { 'content-type': 'application/json' } })
    expect(rotated.status).toBe(200)
    expect(rotated.body.secret).not.toBe(ep.secret)
    const enabled = await f.json('POST', `/v1/endpoints/${ep.id}/enable`)
    expect(enabled).toMatchObject({ status: 200, body: { disabled: false } })
    const ping = await f.json('POST', `/v1/endpoints/${ep.id}/test`)
    expect(ping).toMatchObject({ status: 202, body: { type: 'postbox.ping', deliveries: 1 } })
    const recovered = await f.json('POST', `/v1/endpoints/${ep.id}/recover`, { body: { since: '2020-01-01T00:00:00Z' } })
    expect(recovered).toEqual({ status: 202, body: { queued: 0 } })
    // since and until take a duration back from now beside an ISO time; anything else is a 400.
    expect(await f.json('POST', `/v1/endpoints/${ep.id}/recover`, { body: { since: '1h' } })).toEqual({ status: 202, body: { queued: 0 } })
    expect(await f.json('POST', `/v1/endpoints/${ep.id}/recover`, { body: { since: '2d', until: '30m' } })).toEqual({ status: 202, body: { queued: 0 } })
    for (const body of [{ since: 'yesterday' }, { since: '1h', until: '2h' }, { since: '1w' }]) {
      const bad = await f.json('POST', `/v1/endpoints/${ep.id}/recover`, { body })
      expect(bad.status, JSON.stringify(body)).toBe(400)
      expect(bad.body.error.code).toBe('validation_failed')
    }
    const deleted = await f.json('DELETE', `/v1/endpoints/${ep.id}`)
    expect(deleted).toMatchObject({ status: 200, body: { deleted: true, cancelled: 1 } })
    expect((await f.json('GET', `/v1/endpoints/${ep.id}`)).status).toBe(404)
  })

  it('validates fields and reports each one', async () => {
    const res = await f.json('POST', '/v1/endpoints', { body: { url: 'ftp://x', timeout_ms: 5, signature: 'md5' } })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe('validation_failed')
    const fields = res.body.error.details.map((d: { field: string }) => d.field)
    expect(fields).toEqual(expect.arrayContaining(['timeout_ms', 'signature']))
    // 3 × 3 KiB values: each is allowed, together they would make receivers answer 431.
    const big = Object.fromEntries([1, 2, 3].map((i) => [`x-big-${i}`, 'v'.repeat(3000)]))
    const tooBig = await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/hook', headers: big } })
    expect(tooBig.status).toBe(400)
    expect(tooBig.body.error.details).toEqual([expect.objectContaining({ field: 'headers', message: expect.stringMatching(/^at most 8192 bytes/) })])
    delete big['x-big-3']
    expect((await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/hook', headers: big } })).status).toBe(201)
  })

  it('refuses port 0 in a URL (create and update) like any other malformed URL; ports 1 and 65535 are fine', async () => {
    for (const url of ['http://example.com:0/', 'https://example.com:00/hook', 'http://[2001:db8::1]:0/']) {
      const res = await f.json('POST', '/v1/endpoints', { body: { url } })
      expect(res, url).toMatchObject({ status: 400, body: { error: { code: 'validation_failed', details: [{ field: 'url', message: 'port must be from 1 to 65535' }] } } })
    }
    const ep = await create({ url: 'http://example.com:1/' })
    expect(ep.url).toBe('http://example.com:1/')
    expect((await f.json('PATCH', `/v1/endpoints/${ep.id}`, { body: { url: 'http://example.com:0/x' } })).status).toBe(400)
    expect((await f.json('PATCH', `/v1/endpoints/${ep.id}`, { body: { url: 'http://example.com:65535/x' } })).status).toBe(200)
    expect((await f.json('GET', '/v1/endpoints')).body.data.map((e: { url: string }) => e.url)).toEqual(['http://example.com:65535/x'])
  })

  it('a deleted endpoint is named as deleted (404) by enable, recover and the other endpoint routes', async () => {
    const ep = await create()
    await f.json('DELETE', `/v1/endpoints/${ep.id}`)
    for (const [method, path, body] of [['POST', 'enable'], ['POST', 'recover', { since: '2020-01-01T00:00:00Z' }], ['POST', 'test'], ['GET', ''], ['PATCH', '', {}]] as const) {
      const res = await f.json(method, `/v1/endpoints/${ep.id}${path ? `/${path}` : ''}`, body ? { body } : {})
      expect(res, `${method} ${path}`).toEqual({ status: 404, body: { error: { code: 'not_found', message: `Endpoint ${ep.id} was deleted` } } })
    }
    expect((await f.json('POST', '/v1/endpoints/ep_never/enable')).body.error.message).toBe('Endpoint not found')
  })

  it('lists newest first with limit and an opaque cursor', async () => {
    const ids: string[] = []
    for (let i = 0; i < 5; i++) ids.push((await create({ description: `e${i}` })).id)
    const p1 = await f.json('GET', '/v1/endpoints?limit=2', { key: f.keys.viewer })
    expect(p1.body.data.map((e: { id: string }) => e.id)).toEqual([ids[4], ids[3]])
    expect(typeof p1.body.next_cursor).toBe('string')
    const p2 = await f.json('GET', `/v1/endpoints?limit=2&cursor=${p1.body.next_cursor}`)
    expect(p2.body.data.map((e: { id: string }) => e.id)).toEqual([ids[2], ids[1]])
    const p3 = await f.json('GET', `/v1/endpoints?limit=2&cursor=${p2.body.next_cursor}`)
    expect(p3.body).toMatchObject({ data: [{ id: ids[0] }], next_cursor: null })
    const def = await f.json('GET', '/v1/endpoints')
    expect(def.body.data).toHaveLength(5)
  })
})

describe('/v1/deliveries', () => {
  let f: ApiFixture
  beforeEach(async () => {
    f = await apiFixture()
  })
  afterEach(async () => f.close())

  it('lists with filters, reads one with attempts, and redelivers a terminal one', async () => {
    const a = (await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/a' } })).body
    await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/b' } })
    await f.json('POST', '/v1/events', { body: { type: 'x.one', data: {} } })
    await f.json('POST', '/v1/events', { body: { type: 'x.two', data: {} } })
    expect((await f.json('GET', '/v1/deliveries')).body.data).toHaveLength(4)
    const byEp = await f.json('GET', `/v1/deliveries?endpoint_id=${a.id}`, { key: f.keys.viewer })
    expect(byEp.body.data).toHaveLength(2)
    expect(byEp.body.data.every((d: { endpoint_id: string }) => d.endpoint_id === a.id)).toBe(true)
    const byType = await f.json('GET', '/v1/deliveries?event_type=x.two&status=pending')
    expect(byType.body.data).toHaveLength(2)
    const two = byType.body.data[0].event_id
    const byEvent = await f.json('GET', `/v1/deliveries?event_id=${two}`)
    expect(byEvent.body.data.map((d: { event_id: string }) => d.event_id)).toEqual([two, two])
    expect((await f.json('GET', '/v1/deliveries?event_id=evt_unknown')).body).toEqual({ data: [], next_cursor: null })
    expect((await f.json('GET', '/v1/deliveries?notification_id=ntf_unknown')).body).toEqual({ data: [], next_cursor: null })
    // Events are listed newest first, by type through the events_type index.
    const events = await f.json('GET', '/v1/events?limit=1', { key: f.keys.viewer })
    expect(events.body.data.map((e: { type: string }) => e.type)).toEqual(['x.two'])
    expect(events.body.data[0]).not.toHaveProperty('deliveries')
    const older = await f.json('GET', `/v1/events?limit=1&cursor=${events.body.next_cursor}`)
    expect(older.body).toMatchObject({ data: [{ type: 'x.one', data: {} }], next_cursor: null })
    expect((await f.json('GET', '/v1/events?type=x.one')).body.data.map((e: { type: string }) => e.type)).toEqual(['x.one'])
    expect((await f.json('GET', '/v1/events?cursor=bogus')).body.error).toMatchObject({ code: 'validation_failed', details: [{ field: 'cursor' }] })
    const page = await f.json('GET', '/v1/deliveries?limit=3')
    expect(page.body.data).toHaveLength(3)
    expect(page.body.next_cursor).not.toBeNull()
    const one = await f.json('GET', `/v1/deliveries/${byEp.body.data[0].id}`)
    expect(one.status).toBe(200)
    expect(one.body.attempts).toEqual([])
    // make it terminal through the store (the dispatcher is not running), then redeliver
    const [claimed] = await f.pb.store.deliveries.claimDue({ limit: 1, now: Date.now(), defaultTimeoutMs: 1000 })
    await f.pb.store.deliveries.settle([{ id: claimed!.id, claimToken: claimed!.claimToken, outcome: { kind: 'dead' }, attempt: { startedAt: Date.now(), durationMs: 5, statusCode: 400 } }], Date.now())
    const red = await f.json('POST', `/v1/deliveries/${claimed!.id}/redeliver`)
    expect(red).toEqual({ status: 202, body: { id: claimed!.id, status: 'pending' } })
    const after = await f.json('GET', `/v1/deliveries/${claimed!.id}`)
    expect(after.body).toMatchObject({ status: 'pending', attempt_count: 0 })
    expect(after.body.attempts).toHaveLength(1)
  })

  it('redeliver says whether the endpoint was deleted (never) or is disabled (enable it first)', async () => {
    const gone = (await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/gone' } })).body
    const off = (await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/off' } })).body
    await f.json('POST', '/v1/events', { body: { type: 'x.one', data: {} } })
    const byEndpoint = async (id: string) => (await f.json('GET', `/v1/deliveries?endpoint_id=${id}`)).body.data[0].id as string
    const [toGone, toOff] = [await byEndpoint(gone.id), await byEndpoint(off.id)]
    await f.json('DELETE', `/v1/endpoints/${gone.id}`)
    await f.json('PATCH', `/v1/endpoints/${off.id}`, { body: { disabled: true } })
    const a = await f.json('POST', `/v1/deliveries/${toGone}/redeliver`)
    expect(a).toMatchObject({ status: 409, body: { error: { code: 'not_eligible', message: `Its endpoint ${gone.id} was deleted; a delivery to a deleted endpoint cannot be redelivered` } } })
    expect(a.body.error.message).not.toMatch(/enable/)
    const b = await f.json('POST', `/v1/deliveries/${toOff}/redeliver`)
    expect(b).toMatchObject({ status: 409, body: { error: { code: 'not_eligible', message: `Its endpoint ${off.id} is disabled; enable it first (POST /v1/endpoints/${off.id}/enable)` } } })
    expect((await f.json('POST', `/v1/endpoints/${off.id}/enable`)).status).toBe(200)
    expect((await f.json('POST', `/v1/deliveries/${toOff}/redeliver`)).status).toBe(202)
  })
})
