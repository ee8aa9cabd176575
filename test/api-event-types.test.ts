import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'
import { startReceiver, type Receiver } from './support/receiver.js'

const invoiceSchema = {
  type: 'object',
  required: ['invoice_id', 'amount'],
  properties: {
    invoice_id: { type: 'string', pattern: '^in_' },
    amount: { type: 'integer', minimum: 0 },
    customer: { type: 'object', properties: { email: { type: 'string', format: 'email' } } },
  },
  additionalProperties: false,
}

describe('event-type catalog (docs/applications.md)', () => {
  let f: ApiFixture
  let rx: Receiver
  beforeAll(async () => {
    f = await apiFixture()
    rx = await startReceiver()
  })
  afterAll(async () => {
    await f.close()
    await rx.close()
  })

  it('stores a type, validates data at ingest and reports violations by JSON pointer', async () => {
    const put = await f.json('PUT', '/v1/event-types/invoice.paid', {
      body: { description: 'An invoice was paid', schema: invoiceSchema, example: { invoice_id: 'in_1', amount: 5 } },
    })
    expect(put.status).toBe(200)
    expect(put.body).toMatchObject({ name: 'invoice.paid', version: 1, deprecated: false, archived: false })
    expect((await f.json('POST', '/v1/events', { body: { type: 'invoice.paid', data: { invoice_id: 'in_2', amount: 3 } } })).status).toBe(202)
    const bad = await f.json('POST', '/v1/events', { body: { type: 'invoice.paid', data: { invoice_id: 'x', customer: { email: 'nope' }, extra: 1 } } })
    expect(bad.status).toBe(400)
    expect(bad.body.error.code).toBe('validation_failed')
    const pointers = bad.body.error.details.map((d: { pointer: string }) => d.pointer).sort()
    expect(pointers).toEqual(['/amount', '/customer/email', '/extra', '/invoice_id'])
    expect(bad.body.error.details[0]).toMatchObject({ field: 'data', in: 'body' })
    // A new version replaces the validator.
    const v2 = await f.json('PUT', '/v1/event-types/invoice.paid', { body: { schema: { type: 'object' } } })
    expect(v2.body.version).toBe(2)
    expect((await f.json('POST', '/v1/events', { body: { type: 'invoice.paid', data: { anything: true } } })).status).toBe(202)
  })

  it('refuses a schema that does not compile and an example that does not satisfy the schema', async () => {
    const broken = await f.json('PUT', '/v1/event-types/broken.one', { body: { schema: { type: 'nonsense' } } })
    expect(broken.status).toBe(400)
    expect(broken.body.error.code).toBe('validation_failed')
    expect(broken.body.error.details[0].field).toBe('schema')
    const badRef = await f.json('PUT', '/v1/event-types/broken.two', { body: { schema: { $ref: '#/$defs/missing' } } })
    expect(badRef.status).toBe(400)
    const ex = await f.json('PUT', '/v1/event-types/ex.bad', { body: { schema: invoiceSchema, example: { invoice_id: 'in_1' } } })
    expect(ex.status).toBe(400)
    expect(ex.body.error.details).toEqual([expect.objectContaining({ field: 'example', pointer: '/amount' })])
    expect((await f.json('GET', '/v1/event-types/broken.one')).status).toBe(404)
  })

  it('a batch with one bad item is accepted, with that item’s error in input order', async () => {
    await f.json('PUT', '/v1/event-types/order.placed', { body: { schema: { type: 'object', required: ['order_id'] } } })
    const r = await f.json('POST', '/v1/events/batch', {
      body: { events: [{ type: 'order.placed', data: { order_id: 'o1' } }, { type: 'order.placed', data: {} }, { type: 'order.placed', data: { order_id: 'o3' } }] },
    })
    expect(r.status).toBe(202)
    expect(r.body.results).toHaveLength(3)
    expect(r.body.results[0]).toMatchObject({ type: 'order.placed', deduplicated: false })
    expect(r.body.results[1]).toEqual({ error: { code: 'validation_failed', message: expect.any(String), details: [expect.objectContaining({ field: 'data', pointer: '/order_id' })] } })
    expect(r.body.results[2]).toMatchObject({ type: 'order.placed', deduplicated: false })
  })

  it('archived types are refused at ingest and hidden unless asked for; deprecated ones are accepted', async () => {
    await f.json('PUT', '/v1/event-types/old.thing', { body: { archived: true } })
    await f.json('PUT', '/v1/event-types/aging.thing', { body: { deprecated: true } })
    const r = await f.json('POST', '/v1/events', { body: { type: 'old.thing', data: {} } })
    expect(r.status).toBe(400)
    expect(r.body.error.code).toBe('event_type_archived')
    expect((await f.json('POST', '/v1/events', { body: { type: 'aging.thing', data: {} } })).status).toBe(202)
    const names = (await f.json('GET', '/v1/event-types')).body.data.map((t: { name: string }) => t.name)
    expect(names).not.toContain('old.thing')
    expect(names).toContain('aging.thing')
    const all = (await f.json('GET', '/v1/event-types?include_archived=true')).body.data.map((t: { name: string }) => t.name)
    expect(all).toContain('old.thing')
    expect((await f.json('GET', '/v1/event-types/old.thing')).status).toBe(404)
    expect((await f.json('GET', '/v1/event-types/old.thing?include_archived=true')).status).toBe(200)
    const page = await f.json('GET', '/v1/event-types?limit=1')
    expect(page.body.data).toHaveLength(1)
    const next = await f.json('GET', `/v1/event-types?limit=1&cursor=${page.body.next_cursor}`)
    expect(next.body.data[0].name > page.body.data[0].name).toBe(true)
  })

  it('the endpoint test sends the example of a named type', async () => {
    const ep = await f.json('POST', '/v1/endpoints', { body: { url: rx.url } })
    await f.json('PUT', '/v1/event-types/invoice.sent', { body: { example: { invoice_id: 'in_9' } } })
    const t = await f.json('POST', `/v1/endpoints/${ep.body.id}/test`, { body: { event_type: 'invoice.sent' } })
    expect(t.status).toBe(202)
    expect(t.body).toMatchObject({ type: 'invoice.sent', deliveries: 1 })
    const ev = await f.json('GET', `/v1/events/${t.body.id}`)
    expect(ev.body.data).toEqual({ invoice_id: 'in_9' })
    expect((await f.json('POST', `/v1/endpoints/${ep.body.id}/test`, { body: { event_type: 'no.such' } })).status).toBe(404)
    expect((await f.json('POST', `/v1/endpoints/${ep.body.id}/test`, { body: { event_type: 'old.thing' } })).body.error.code).toBe('event_type_archived')
    const ping = await f.json('POST', `/v1/endpoints/${ep.body.id}/test`)
    expect(ping.body.type).toBe('postbox.ping')
  })
})

describe('POSTBOX_EVENT_TYPES=strict', () => {
  let f: ApiFixture
  beforeAll(async () => {
    f = await apiFixture({ eventTypes: 'strict' })
  })
  afterAll(async () => {
    await f.close()
  })

  it('refuses types outside the catalog and subscriptions to them', async () => {
    const r = await f.json('POST', '/v1/events', { body: { type: 'not.listed', data: {} } })
    expect(r.status).toBe(400)
    expect(r.body.error.code).toBe('unknown_event_type')
    await f.json('PUT', '/v1/event-types/listed.one', {})
    expect((await f.json('POST', '/v1/events', { body: { type: 'listed.one', data: {} } })).status).toBe(202)
    const ep = await f.json('POST', '/v1/endpoints', { body: { url: 'http://127.0.0.1:9/x', event_types: ['listed.one', 'other.*', 'not.listed'] } })
    expect(ep.status).toBe(400)
    expect(ep.body.error.details).toEqual([expect.objectContaining({ field: 'event_types.2' })])
    const ok = await f.json('POST', '/v1/endpoints', { body: { url: 'http://127.0.0.1:9/x', event_types: ['listed.one', 'other.*', '*'] } })
    expect(ok.status).toBe(201)
    // An update checks its event_types against the catalog too (read before its transaction).
    const patched = await f.json('PATCH', `/v1/endpoints/${ok.body.id}`, { body: { event_types: ['not.listed'] } })
    expect(patched).toMatchObject({ status: 400, body: { error: { details: [expect.objectContaining({ field: 'event_types.0' })] } } })
    expect((await f.json('PATCH', `/v1/endpoints/${ok.body.id}`, { body: { event_types: ['listed.one'] } })).body.event_types).toEqual(['listed.one'])
    const b = await f.json('POST', '/v1/events/batch', { body: { events: [{ type: 'listed.one', data: {} }, { type: 'not.listed', data: {} }] } })
    expect(b.status).toBe(202)
    expect(b.body.results[1].error.code).toBe('unknown_event_type')
  })
})
