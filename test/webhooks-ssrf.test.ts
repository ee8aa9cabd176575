import { afterEach, describe, expect, it } from 'vitest'
import { startReceiver, type Receiver } from './support/receiver.js'
import { until, webhookHarness, type WebhookHarness } from './support/webhooks-harness.js'

let h: WebhookHarness
let rx: Receiver | undefined

afterEach(async () => {
  await h?.close()
  await rx?.close()
  rx = undefined
})

describe('destination safety (docs/delivery.md)', () => {
  const refused = [
    'http://127.0.0.1/', 'http://10.1.2.3/', 'http://172.16.0.1/', 'http://192.168.1.1/', 'http://169.254.169.254/latest',
    'http://100.64.0.1/', 'http://0.0.0.0/', 'http://224.0.0.1/', 'http://[::1]/', 'http://[fd00::1]/', 'http://[fe80::1]/',
    'http://[::ffff:127.0.0.1]/', 'http://[::ffff:10.0.0.1]/', 'http://[64:ff9b::a9fe:a9fe]/', 'http://[::]/',
    'http://2130706433/', 'http://0x7f.1/', 'https://[2002:a00:1::]/',
  ]
  for (const url of refused) {
    it(`refuses ${url} at create with 422 destination_not_allowed`, async () => {
      h = await webhookHarness({ config: { allowNetworks: [] } })
      await expect(h.webhooks.endpoints.create({ url })).rejects.toThrow(expect.objectContaining({ code: 'destination_not_allowed', status: 422 }))
    })
  }

  it('accepts public literals and hostnames at create', async () => {
    h = await webhookHarness({ config: { allowNetworks: [] } })
    expect((await h.webhooks.endpoints.create({ url: 'https://93.184.215.14/x' })).url).toBe('https://93.184.215.14/x')
    expect((await h.webhooks.endpoints.create({ url: 'http://[2606:4700::1111]/' })).url).toBe('http://[2606:4700::1111]/')
    expect((await h.webhooks.endpoints.create({ url: 'http://localhost:9/x' })).url).toBe('http://localhost:9/x')
  })

  it('refuses a private literal on update too', async () => {
    h = await webhookHarness({ config: { allowNetworks: [] } })
    const ep = await h.webhooks.endpoints.create({ url: 'https://example.com/' })
    await expect(h.webhooks.endpoints.update(ep.id, { url: 'http://192.168.0.10/' })).rejects.toThrow(expect.objectContaining({ code: 'destination_not_allowed' }))
  })

  for (const url of ['ftp://example.com/', 'http://user:pass@example.com/', 'http://user@example.com/', 'not a url', 'file:///etc/passwd']) {
    it(`rejects ${url} with 400 validation_failed`, async () => {
      h = await webhookHarness({ config: { allowNetworks: [] } })
      await expect(h.webhooks.endpoints.create({ url })).rejects.toThrow(expect.objectContaining({ code: 'validation_failed', status: 400 }))
    })
  }

  it('allow-networks opens a range for literals', async () => {
    h = await webhookHarness({ config: { allowNetworks: ['10.0.0.0/8'] } })
    expect((await h.webhooks.endpoints.create({ url: 'http://10.9.9.9/' })).url).toBe('http://10.9.9.9/')
  })

  it('refuses a hostname that resolves to loopback at connect time: dead, and the receiver gets nothing', async () => {
    rx = await startReceiver()
    h = await webhookHarness({ config: { allowNetworks: [] } })
    await h.webhooks.endpoints.create({ url: `http://localhost:${rx.port}/hook` })
    await h.webhooks.events.send({ type: 'a', data: {} })
    h.dispatcher.start()
    const d = await until(async () => (await h.webhooks.deliveries.list({ status: 'dead' })).data[0])
    expect(d.last_error).toBe('destination_not_allowed')
    expect((await h.webhooks.deliveries.get(d.id)).attempts).toMatchObject([{ outcome: 'dead', error: 'destination_not_allowed', status_code: null }])
    expect(rx.requests).toHaveLength(0)
  })

  it('the same hostname is delivered once its range is allowed', async () => {
    rx = await startReceiver()
    h = await webhookHarness({ config: { allowNetworks: ['127.0.0.0/8'] } })
    await h.webhooks.endpoints.create({ url: `http://localhost:${rx.port}/hook` })
    await h.webhooks.events.send({ type: 'a', data: {} })
    h.dispatcher.start()
    await rx.waitFor(1)
  })

  it('connects to the address the guard checked (no second lookup)', async () => {
    rx = await startReceiver()
    let lookups = 0
    const resolve = ((_host: string, _opts: unknown, cb: (e: null, a: { address: string; family: number }[]) => void) => {
      lookups++
      cb(null, [{ address: '127.0.0.1', family: 4 }])
    }) as never
    h = await webhookHarness({ sender: { resolve } })
    await h.webhooks.endpoints.create({ url: `http://rebind.example:${rx.port}/` })
    await h.webhooks.events.send({ type: 'a', data: {} })
    h.dispatcher.start()
    const [req] = await rx.waitFor(1)
    expect(req!.headers.host).toBe(`rebind.example:${rx.port}`)
    expect(lookups).toBe(1)
  })
})
