import { createHmac } from 'node:crypto'
import { Webhook } from 'standardwebhooks'
import { afterEach, describe, expect, it } from 'vitest'
import { startReceiver, type Receiver } from './support/receiver.js'
import { until, webhookHarness, type WebhookHarness } from './support/webhooks-harness.js'

let h: WebhookHarness
let rx: Receiver

afterEach(async () => {
  await h?.close()
  await rx?.close()
})

const headersOf = (r: { headers: Record<string, string | string[] | undefined> }): Record<string, string> =>
  Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : (v ?? '')]))

describe('signed webhook requests', () => {
  it('sends the Standard Webhooks headers (docs/delivery.md) and a body the standardwebhooks library verifies; a tampered body fails', async () => {
    rx = await startReceiver()
    h = await webhookHarness()
    const ep = await h.webhooks.endpoints.create({ url: `${rx.url}/hook?x=1`, headers: { 'X-Tenant': 't1' } })
    expect(ep.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    const ev = await h.webhooks.events.send({ type: 'invoice.paid', data: { amount: 5 } })
    h.dispatcher.start()
    const [req] = await rx.waitFor(1)
    const headers = headersOf(req!)
    expect(req!.method).toBe('POST')
    expect(req!.path).toBe('/hook?x=1')
    expect(headers['content-type']).toBe('application/json')
    expect(headers['user-agent']).toMatch(/^Postbox\/\d+\.\d+\.\d+/)
    expect(headers['webhook-id']).toBe(ev.id)
    expect(headers['postbox-event-type']).toBe('invoice.paid')
    expect(headers['postbox-delivery-id']).toMatch(/^dlv_/)
    expect(headers['postbox-attempt']).toBe('1')
    expect(headers['x-tenant']).toBe('t1')
    const body = JSON.parse(req!.body) as Record<string, unknown>
    expect(Object.keys(body)).toEqual(['id', 'type', 'timestamp', 'data'])
    expect(body).toMatchObject({ id: ev.id, type: 'invoice.paid', data: { amount: 5 } })

    const wh = new Webhook(ep.secret!)
    expect(wh.verify(req!.body, headers)).toEqual(body)
    expect(() => wh.verify(req!.body.replace('5', '6'), headers)).toThrow()
    expect(() => new Webhook('whsec_' + Buffer.alloc(32, 1).toString('base64')).verify(req!.body, headers)).toThrow()
  })

  it('sends the same body byte for byte on a retry, with a fresh signature', async () => {
    rx = await startReceiver((_r, i) => ({ status: i === 0 ? 500 : 200 }))
    h = await webhookHarness()
    const ep = await h.webhooks.endpoints.create({ url: rx.url, retry_schedule: ['5ms'] })
    await h.webhooks.events.send({ type: 'a.b', data: { x: 'é' } })
    h.dispatcher.start()
    const [a, b] = await rx.waitFor(2)
    expect(b!.body).toBe(a!.body)
    expect(a!.headers['webhook-id']).toBe(b!.headers['webhook-id'])
    expect(b!.headers['postbox-attempt']).toBe('2')
    expect(new Webhook(ep.secret!).verify(b!.body, headersOf(b!))).toBeTruthy()
  })

  it('during a rotation grace period both secrets verify; after it only the new one', async () => {
    rx = await startReceiver()
    h = await webhookHarness()
    const ep = await h.webhooks.endpoints.create({ url: rx.url })
    const supplied = 'whsec_' + Buffer.alloc(24, 7).toString('base64')
    const { secret } = await h.webhooks.endpoints.rotateSecret(ep.id, { secret: supplied })
    expect(secret).toBe(supplied)
    expect(await h.webhooks.endpoints.getSecret(ep.id)).toEqual({ secret: supplied })
    await h.webhooks.events.send({ type: 'a', data: {} })
    h.dispatcher.start()
    const [req] = await rx.waitFor(1)
    const headers = headersOf(req!)
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2)
    expect(new Webhook(ep.secret!).verify(req!.body, headers)).toBeTruthy()
    expect(new Webhook(supplied).verify(req!.body, headers)).toBeTruthy()

    await h.webhooks.endpoints.rotateSecret(ep.id, { grace_seconds: 0 })
    const now = (await h.webhooks.endpoints.getSecret(ep.id)).secret
    await h.webhooks.events.send({ type: 'a', data: {} })
    const [, req2] = await rx.waitFor(2)
    // grace 0 drops `supplied`; only the very first secret is still in its (default) grace.
    const sigs = headersOf(req2!)['webhook-signature']!.split(' ')
    expect(sigs).toHaveLength(2)
    expect(new Webhook(now).verify(req2!.body, headersOf(req2!))).toBeTruthy()
    expect(() => new Webhook(supplied).verify(req2!.body, headersOf(req2!))).toThrow()
  })

  it('hmac-sha256 mode signs the body with the UTF-8 secret string and honours PUT', async () => {
    rx = await startReceiver()
    h = await webhookHarness()
    const secret = 'my plain shared secret'
    const ep = await h.webhooks.endpoints.create({ url: rx.url, signature: 'hmac-sha256', secret, method: 'PUT' })
    expect(ep.secret).toBe(secret)
    await h.webhooks.events.send({ type: 'a', data: { n: 1 } })
    h.dispatcher.start()
    const [req] = await rx.waitFor(1)
    expect(req!.method).toBe('PUT')
    const expected = 'sha256=' + createHmac('sha256', Buffer.from(secret, 'utf8')).update(req!.body).digest('hex')
    expect(req!.headers['x-postbox-signature']).toBe(expected)
    expect(req!.headers['webhook-signature']).toBeUndefined()
    await until(async () => (await h.webhooks.deliveries.list({ status: 'success' })).data.length === 1)
  })

  it('keeps data, metadata and custom headers exactly as accepted, __proto__ and constructor keys included', async () => {
    rx = await startReceiver()
    h = await webhookHarness()
    const ep = await h.webhooks.endpoints.create(JSON.parse(`{"url": "${rx.url}", "headers": {"__proto__": "kept"}, "metadata": {"__proto__": {"m": 1}}}`))
    expect(JSON.stringify(ep.headers)).toBe('{"__proto__":"kept"}')
    expect(JSON.stringify((await h.webhooks.endpoints.get(ep.id)).metadata)).toBe('{"__proto__":{"m":1}}')
    const data = JSON.parse('{"__proto__": {"p": 1}, "constructor": {"c": 2}, "a": 3}') as Record<string, unknown>
    await h.webhooks.events.send({ type: 'a', data })
    h.dispatcher.start()
    const [req] = await rx.waitFor(1)
    expect(JSON.stringify(JSON.parse(req!.body).data)).toBe('{"__proto__":{"p":1},"constructor":{"c":2},"a":3}')
    expect(({} as Record<string, unknown>).p).toBeUndefined()
  })

  it('switching from hmac-sha256 to standard during a rotation grace keeps delivering, signed with the new key', async () => {
    rx = await startReceiver()
    h = await webhookHarness()
    const ep = await h.webhooks.endpoints.create({ url: rx.url, signature: 'hmac-sha256', secret: 'my-plain-secret-1234' })
    const { secret } = await h.webhooks.endpoints.rotateSecret(ep.id, { secret: Buffer.alloc(32, 7).toString('base64') })
    // The plain secret stays in its grace period, but it means nothing to a standard receiver.
    await h.webhooks.endpoints.update(ep.id, { signature: 'standard' })
    await h.webhooks.events.send({ type: 'a', data: {} })
    h.dispatcher.start()
    const [req] = await rx.waitFor(1)
    const sigs = headersOf(req!)['webhook-signature']!.split(' ')
    expect(sigs).toHaveLength(1)
    expect(new Webhook(secret).verify(req!.body, headersOf(req!))).toBeTruthy()
    await until(async () => (await h.webhooks.deliveries.list({ status: 'success' })).data.length === 1)
  })
})
