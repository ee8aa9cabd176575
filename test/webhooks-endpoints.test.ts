import { Webhook } from 'standardwebhooks'
import { afterEach, describe, expect, it } from 'vitest'
import { webhookHarness, type WebhookHarness } from './support/webhooks-harness.js'

let h: WebhookHarness
afterEach(async () => {
  await h?.close()
})

const invalid = async (fn: () => Promise<unknown>, path: string): Promise<void> => {
  try {
    await fn()
  } catch (err) {
    expect(err).toMatchObject({ code: 'validation_failed', status: 400 })
    expect((err as { details: { path: string }[] }).details.map((d) => d.path)).toContain(path)
    return
  }
  throw new Error('expected validation_failed')
}

describe('endpoints', () => {
  it('creates with defaults, never shows the secret in get/list, and lists newest first', async () => {
    h = await webhookHarness()
    const a = await h.webhooks.endpoints.create({ url: 'https://a.example.com/hook' })
    const b = await h.webhooks.endpoints.create({ url: 'https://b.example.com/hook', retry_schedule: ['500ms', 2000, '1m'], rate_limit: 5 })
    expect(a).toMatchObject({
      url: 'https://a.example.com/hook', description: '', event_types: null, headers: {}, method: 'POST', timeout_ms: 15000,
      max_concurrency: 16, rate_limit: null, ordered: false, retry_schedule: null, signature: 'standard', metadata: {},
      disabled: false, disabled_reason: null, last_success_at: null, consecutive_failures: 0, circuit: 'closed',
    })
    expect(Buffer.from(a.secret!.slice(6), 'base64')).toHaveLength(32)
    expect(b.retry_schedule).toEqual([500, 2000, 60000])
    expect(await h.webhooks.endpoints.get(a.id)).not.toHaveProperty('secret')
    const page = await h.webhooks.endpoints.list({ limit: 1 })
    expect(page.data.map((e) => e.id)).toEqual([b.id])
    expect(page.data[0]).not.toHaveProperty('secret')
    expect((await h.webhooks.endpoints.list({ limit: 1, cursor: page.next_cursor })).data.map((e) => e.id)).toEqual([a.id])
  })

  it('validates fields with details', async () => {
    h = await webhookHarness()
    await invalid(() => h.webhooks.endpoints.create({ url: 'https://x.example', timeout_ms: 500 }), 'timeout_ms')
    await invalid(() => h.webhooks.endpoints.create({ url: 'https://x.example', timeout_ms: 61_000 }), 'timeout_ms')
    await invalid(() => h.webhooks.endpoints.create({ url: 'https://x.example', event_types: ['bad type'] }), 'event_types.0')
    await invalid(() => h.webhooks.endpoints.create({ url: 'https://x.example', retry_schedule: ['soon'] }), 'retry_schedule.0')
    await invalid(() => h.webhooks.endpoints.create({ url: 'https://x.example', retry_schedule: ['25h'] }), 'retry_schedule.0')
    await invalid(() => h.webhooks.endpoints.create({ url: 'https://x.example', method: 'GET' as never }), 'method')
    await invalid(() => h.webhooks.endpoints.create({ url: 'https://x.example', headers: { 'bad name': 'v' } }), 'headers.bad name')
    await invalid(() => h.webhooks.endpoints.create({ url: 'https://x.example', headers: { 'X-A': 'a\r\nInjected: 1' } }), 'headers.X-A')
    // Anything undici would refuse at send time is refused here: control characters, non-Latin-1.
    for (const value of ['a\u0001b', 'caf\u00e9 \u20ac', 'x\u007f']) {
      await invalid(() => h.webhooks.endpoints.create({ url: 'https://x.example', headers: { 'X-A': value } }), 'headers.X-A')
    }
    expect((await h.webhooks.endpoints.create({ url: 'https://x.example', headers: { 'X-A': 'tab\there caf\u00e9' } })).headers).toEqual({ 'X-A': 'tab\there caf\u00e9' })
    for (const name of ['Webhook-Signature', 'webhook-id', 'Content-Type', 'USER-AGENT', 'Postbox-Attempt', 'X-Postbox-Signature', 'Host']) {
      await invalid(() => h.webhooks.endpoints.create({ url: 'https://x.example', headers: { [name]: 'v' } }), `headers.${name}`)
    }
    await invalid(() => h.webhooks.endpoints.create({ url: 'https://x.example', secret: 'whsec_' + Buffer.alloc(16).toString('base64') }), 'secret')
    await invalid(() => h.webhooks.endpoints.create({ url: 'https://x.example', secret: 'whsec_' + Buffer.alloc(65).toString('base64') }), 'secret')
    await invalid(() => h.webhooks.endpoints.create({ url: 'https://x.example', secret: 'not base64!' }), 'secret')
    await invalid(() => h.webhooks.endpoints.create({ url: 'https://x.example', signature: 'hmac-sha256', secret: 'short' }), 'secret')
    await expect(h.webhooks.endpoints.get('ep_nope')).rejects.toThrow(expect.objectContaining({ code: 'not_found', status: 404 }))
  })

  it('accepts user secrets of 24–64 bytes with or without the prefix, usable by standardwebhooks', async () => {
    h = await webhookHarness()
    const raw = Buffer.alloc(64, 3).toString('base64')
    const ep = await h.webhooks.endpoints.create({ url: 'https://x.example', secret: raw })
    expect(ep.secret).toBe('whsec_' + raw)
    expect(() => new Webhook(ep.secret!)).not.toThrow()
  })

  it('updates, disables manually (killing pending deliveries), re-enables and soft-deletes (cancelling pending)', async () => {
    h = await webhookHarness()
    const ep = await h.webhooks.endpoints.create({ url: 'https://x.example/a', event_types: ['invoice.*'] })
    const up = await h.webhooks.endpoints.update(ep.id, { description: 'billing', rate_limit: null, headers: { 'X-Env': 'prod' } })
    expect(up).toMatchObject({ description: 'billing', headers: { 'X-Env': 'prod' }, event_types: ['invoice.*'] })
    await h.webhooks.events.send({ type: 'invoice.paid', data: {} })
    expect(await h.webhooks.endpoints.update(ep.id, { disabled: true })).toMatchObject({ disabled: true, disabled_reason: 'manual' })
    expect((await h.webhooks.deliveries.list()).data[0]).toMatchObject({ status: 'dead', last_error: 'endpoint_disabled' })
    expect((await h.webhooks.events.send({ type: 'invoice.paid', data: {} })).deliveries).toBe(0)
    expect((await h.webhooks.endpoints.update(ep.id, { disabled: false })).disabled).toBe(false)
    await h.webhooks.events.send({ type: 'invoice.paid', data: {} })
    expect(await h.webhooks.endpoints.remove(ep.id)).toEqual({ deleted: true, cancelled: 1 })
    await expect(h.webhooks.endpoints.get(ep.id)).rejects.toThrow(expect.objectContaining({ code: 'not_found' }))
    expect((await h.webhooks.endpoints.list()).data).toHaveLength(0)
    expect((await h.webhooks.events.send({ type: 'invoice.paid', data: {} })).deliveries).toBe(0)
  })

  it('refuses to switch to standard signatures while the secret is not a whsec_ key', async () => {
    h = await webhookHarness()
    const ep = await h.webhooks.endpoints.create({ url: 'https://x.example', signature: 'hmac-sha256', secret: 'a plain secret string' })
    await invalid(() => h.webhooks.endpoints.update(ep.id, { signature: 'standard' }), 'signature')
  })
})

describe('events and fan-out', () => {
  it('fans out to enabled endpoints whose filter matches, in the same transaction', async () => {
    h = await webhookHarness()
    const all = await h.webhooks.endpoints.create({ url: 'https://all.example' })
    const inv = await h.webhooks.endpoints.create({ url: 'https://inv.example', event_types: ['invoice.*'] })
    const exact = await h.webhooks.endpoints.create({ url: 'https://exact.example', event_types: ['user.created', 'invoice.paid'] })
    await h.webhooks.endpoints.create({ url: 'https://off.example', disabled: true })
    const star = await h.webhooks.endpoints.create({ url: 'https://star.example', event_types: ['*'] })
    const ev = await h.webhooks.events.send({ type: 'invoice.paid', data: { a: 1 }, ordering_key: 'cus_1' })
    expect(ev).toMatchObject({ type: 'invoice.paid', deliveries: 4, deduplicated: false })
    const got = await h.webhooks.events.get(ev.id)
    expect(got.deliveries.map((d) => d.endpoint_id).sort()).toEqual([all.id, inv.id, exact.id, star.id].sort())
    expect(got).toMatchObject({ data: { a: 1 }, ordering_key: 'cus_1' })
    expect((await h.webhooks.events.send({ type: 'invoices.x', data: {} })).deliveries).toBe(2)
    expect((await h.webhooks.events.send({ type: 'user.created', data: {} })).deliveries).toBe(3)
    // Operational events are opt-in: '*' and absent filters do not receive them.
    expect((await h.webhooks.publish('postbox.endpoint.disabled', {})).deliveries).toBe(0)
  })

  it('dedups on the client id, returning the original with deduplicated: true', async () => {
    h = await webhookHarness()
    await h.webhooks.endpoints.create({ url: 'https://all.example' })
    const first = await h.webhooks.events.send({ type: 'a', data: { n: 1 }, id: 'client-1' })
    const again = await h.webhooks.events.send({ type: 'a', data: { n: 2 }, id: 'client-1' })
    expect(again).toEqual({ ...first, deduplicated: true })
    expect((await h.webhooks.events.get('client-1')).id).toBe(first.id)
    expect(await h.webhooks.events.send({ type: 'b', data: {}, id: 'client-1' })).toEqual({ ...first, deduplicated: true })
  })

  it('sendMany stores a batch in one transaction, in order, dedup within the batch included', async () => {
    h = await webhookHarness()
    await h.webhooks.endpoints.create({ url: 'https://all.example' })
    const res = await h.webhooks.events.sendMany([
      { type: 'a', data: {}, id: 'x' },
      { type: 'b', data: {} },
      { type: 'a', data: {}, id: 'x' },
    ])
    expect(res.map((r) => [r.type, r.deduplicated])).toEqual([['a', false], ['b', false], ['a', true]])
    expect(res[2]!.id).toBe(res[0]!.id)
    await invalid(() => h.webhooks.events.sendMany([{ type: 'ok', data: {} }, { type: 'bad type', data: {} }]), 'events.1.type')
    expect((await h.webhooks.deliveries.list()).data).toHaveLength(2)
  })

  it('validates events', async () => {
    h = await webhookHarness()
    await invalid(() => h.webhooks.events.send({ type: '', data: {} }), 'type')
    await invalid(() => h.webhooks.events.send({ type: 'x'.repeat(201), data: {} }), 'type')
    await invalid(() => h.webhooks.events.send({ type: 'a', data: [] as never }), 'data')
    await invalid(() => h.webhooks.events.send({ type: 'a', data: 'str' as never }), 'data')
    await expect(h.webhooks.events.get('evt_nope')).rejects.toThrow(expect.objectContaining({ code: 'not_found' }))
  })

  it('test() sends postbox.ping to that endpoint only', async () => {
    h = await webhookHarness()
    const a = await h.webhooks.endpoints.create({ url: 'https://a.example', event_types: ['x'] })
    await h.webhooks.endpoints.create({ url: 'https://b.example' })
    const ev = await h.webhooks.endpoints.test(a.id)
    expect(ev).toMatchObject({ type: 'postbox.ping', deliveries: 1 })
    expect((await h.webhooks.events.get(ev.id)).deliveries[0]!.endpoint_id).toBe(a.id)
  })
})
