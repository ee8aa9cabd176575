import { afterEach, describe, expect, it } from 'vitest'
import { startReceiver, type Receiver } from './support/receiver.js'
import { until, webhookHarness, type WebhookHarness } from './support/webhooks-harness.js'

let h: WebhookHarness
let rx: Receiver

afterEach(async () => {
  await h?.close()
  await rx?.close()
})

describe('retries, redeliver and recover', () => {
  it('retries until success and logs every attempt', async () => {
    rx = await startReceiver((_r, i) => ({ status: i < 2 ? 503 : 200, body: `try ${i + 1}` }))
    h = await webhookHarness()
    await h.webhooks.endpoints.create({ url: rx.url, retry_schedule: ['10ms', 10, '10ms'] })
    const ev = await h.webhooks.events.send({ type: 'a', data: {} })
    h.dispatcher.start()
    const d = await until(async () => (await h.webhooks.events.get(ev.id)).deliveries.find((x) => x.status === 'success'))
    const full = await h.webhooks.deliveries.get(d.id)
    expect(full.attempt_count).toBe(3)
    expect(full.attempts.map((a) => [a.attempt, a.outcome, a.status_code, a.response_body])).toEqual([
      [1, 'retry', 503, 'try 1'],
      [2, 'retry', 503, 'try 2'],
      [3, 'success', 200, 'try 3'],
    ])
    expect(rx.requests.map((r) => r.headers['postbox-attempt'])).toEqual(['1', '2', '3'])
  })

  it('is dead after the schedule is exhausted, then redeliver sends it again with history kept', async () => {
    rx = await startReceiver({ status: 500 })
    h = await webhookHarness()
    await h.webhooks.endpoints.create({ url: rx.url, retry_schedule: ['10ms', '10ms'] })
    await h.webhooks.events.send({ type: 'a', data: {} })
    h.dispatcher.start()
    const d = await until(async () => (await h.webhooks.deliveries.list({ status: 'dead' })).data[0])
    const dead = await h.webhooks.deliveries.get(d.id)
    expect(dead.attempts.map((a) => a.outcome)).toEqual(['retry', 'retry', 'dead'])
    expect(rx.requests).toHaveLength(3)

    await expect(h.webhooks.deliveries.redeliver('dlv_unknown')).rejects.toThrow(expect.objectContaining({ code: 'not_found', status: 404 }))
    rx.reply({ status: 200 })
    expect(await h.webhooks.deliveries.redeliver(d.id)).toEqual({ id: d.id, status: 'pending' })
    await until(async () => (await h.webhooks.deliveries.get(d.id)).status === 'success')
    const after = await h.webhooks.deliveries.get(d.id)
    expect(after.attempts).toHaveLength(4)
    expect(after.attempt_count).toBe(1)
    expect(rx.requests[3]!.headers['postbox-attempt']).toBe('1')
  })

  it('redeliver of a pending delivery is 409 not_eligible', async () => {
    h = await webhookHarness()
    await h.webhooks.endpoints.create({ url: 'http://127.0.0.1:9/x' })
    await h.webhooks.events.send({ type: 'a', data: {} })
    const [d] = (await h.webhooks.deliveries.list()).data
    await expect(h.webhooks.deliveries.redeliver(d!.id)).rejects.toThrow(expect.objectContaining({ code: 'not_eligible', status: 409 }))
  })

  it('recover sends the dead deliveries of a window back to pending', async () => {
    rx = await startReceiver({ status: 400 })
    h = await webhookHarness()
    const ep = await h.webhooks.endpoints.create({ url: rx.url })
    for (let i = 0; i < 3; i++) await h.webhooks.events.send({ type: 'a', data: { i } })
    h.dispatcher.start()
    await until(async () => (await h.webhooks.deliveries.list({ status: 'dead' })).data.length === 3)
    rx.reply({ status: 200 })
    const since = new Date(Date.now() - 60_000).toISOString()
    await expect(h.webhooks.endpoints.recover(ep.id, { since, until: since })).rejects.toThrow(expect.objectContaining({ code: 'validation_failed' }))
    expect(await h.webhooks.endpoints.recover(ep.id, { since, until: new Date(Date.now() - 30_000).toISOString() })).toEqual({ queued: 0 })
    // A duration is that long ago: `1h` is the hour before now.
    expect(await h.webhooks.endpoints.recover(ep.id, { since: '2h', until: '1h' })).toEqual({ queued: 0 })
    expect(await h.webhooks.endpoints.recover(ep.id, { since: '1h' })).toEqual({ queued: 3 })
    await until(async () => (await h.webhooks.deliveries.list({ status: 'success' })).data.length === 3)
    expect(rx.requests).toHaveLength(6)
  })

  it('a delivery in flight when its endpoint is deleted or disabled ends cancelled or dead when it fails, not pending', async () => {
    const release: (() => void)[] = []
    rx = await startReceiver(() => new Promise((r) => release.push(() => r({ status: 500 }))))
    h = await webhookHarness()
    const gone = await h.webhooks.endpoints.create({ url: rx.url + '/deleted', retry_schedule: ['10ms'] })
    const off = await h.webhooks.endpoints.create({ url: rx.url + '/disabled', retry_schedule: ['10ms'] })
    await h.webhooks.events.send({ type: 'a', data: {} })
    h.dispatcher.start()
    await rx.waitFor(2)
    await h.webhooks.endpoints.remove(gone.id)
    await h.webhooks.endpoints.update(off.id, { disabled: true })
    for (const r of release) r()
    const ended = await until(async () => {
      const all = (await h.webhooks.deliveries.list()).data
      return all.every((d) => d.status !== 'pending' && d.status !== 'in_flight') && all
    })
    const byEndpoint = Object.fromEntries(ended.map((d) => [d.endpoint_id, [d.status, d.last_error]]))
    expect(byEndpoint).toEqual({ [gone.id]: ['cancelled', 'endpoint_deleted'], [off.id]: ['dead', 'endpoint_disabled'] })
    expect(rx.requests).toHaveLength(2)
    // Neither can be redelivered or recovered while its endpoint is gone.
    const offDelivery = ended.find((d) => d.endpoint_id === off.id)!
    await expect(h.webhooks.deliveries.redeliver(offDelivery.id)).rejects.toThrow(expect.objectContaining({ code: 'not_eligible', status: 409 }))
    await expect(h.webhooks.endpoints.recover(off.id, { since: new Date(0).toISOString() })).rejects.toThrow(expect.objectContaining({ status: 409 }))
    await h.webhooks.endpoints.update(off.id, { disabled: false })
    expect(await h.webhooks.endpoints.recover(off.id, { since: new Date(0).toISOString() })).toEqual({ queued: 1 })
  })

  it('an ordered endpoint attempts one ordering key strictly in order, even across failures', async () => {
    const failedOnce = new Set<string>()
    rx = await startReceiver((r) => {
      const id = JSON.parse(r.body).data.n as number
      if (!failedOnce.has(String(id))) {
        failedOnce.add(String(id))
        return { status: 500 }
      }
      return { status: 200 }
    })
    h = await webhookHarness()
    await h.webhooks.endpoints.create({ url: rx.url, ordered: true, retry_schedule: ['10ms', '10ms', '10ms'] })
    for (let n = 0; n < 4; n++) await h.webhooks.events.send({ type: 'a', data: { n }, ordering_key: 'acct_1' })
    // Rows behind the first wait for their turn: pending, with no time of their own yet.
    const queued = (await h.webhooks.deliveries.list({ status: 'pending' })).data.reverse()
    expect(queued.map((d) => d.next_attempt_at === null)).toEqual([false, true, true, true])
    h.dispatcher.start()
    await until(async () => (await h.webhooks.deliveries.list({ status: 'success' })).data.length === 4)
    expect(rx.requests.map((r) => JSON.parse(r.body).data.n)).toEqual([0, 0, 1, 1, 2, 2, 3, 3])
  })

  it('an unordered endpoint does not hold newer deliveries behind a failing one', async () => {
    rx = await startReceiver((r) => ({ status: JSON.parse(r.body).data.n === 0 ? 500 : 200 }))
    h = await webhookHarness()
    await h.webhooks.endpoints.create({ url: rx.url, retry_schedule: ['1h'] })
    for (let n = 0; n < 3; n++) await h.webhooks.events.send({ type: 'a', data: { n }, ordering_key: 'k' })
    h.dispatcher.start()
    await until(async () => (await h.webhooks.deliveries.list({ status: 'success' })).data.length === 2)
  })
})
