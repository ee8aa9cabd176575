import { afterEach, describe, expect, it } from 'vitest'
import { startReceiver, type Receiver, type Reply } from './support/receiver.js'
import { until, webhookHarness, type WebhookHarness } from './support/webhooks-harness.js'

let h: WebhookHarness
let rx: Receiver | undefined

afterEach(async () => {
  await h?.close()
  await rx?.close()
  rx = undefined
})

/** Sends one event to an endpoint answering `reply` and returns the delivery once its first attempt settled. */
async function firstAttempt(reply: Reply, endpoint: Record<string, unknown> = {}) {
  rx = await startReceiver(reply)
  h = await webhookHarness()
  const ep = await h.webhooks.endpoints.create({ url: rx.url, retry_schedule: ['1h'], ...endpoint })
  await h.webhooks.events.send({ type: 'a', data: {} })
  const t0 = Date.now()
  h.dispatcher.start()
  const d = await until(async () => (await h.webhooks.deliveries.list()).data.find((r) => r.attempt_count === 1 && r.status !== 'in_flight'))
  return { ep, d: await h.webhooks.deliveries.get(d.id), t0 }
}

describe('response classification (docs/delivery.md)', () => {
  it('2xx is success and the response body is logged', async () => {
    const { d } = await firstAttempt({ status: 204 })
    expect(d.status).toBe('success')
    expect(d.attempts).toMatchObject([{ attempt: 1, outcome: 'success', status_code: 204, error: null }])
  })

  for (const status of [408, 425, 429, 500, 502, 503]) {
    it(`${status} is retried on the schedule`, async () => {
      const { d, t0 } = await firstAttempt({ status, body: 'nope' })
      expect(d.status).toBe('pending')
      expect(d.attempts).toMatchObject([{ outcome: 'retry', status_code: status, error: `http_${status}`, response_body: 'nope' }])
      const next = Date.parse(d.next_attempt_at!)
      expect(next - t0).toBeGreaterThan(0.8 * 3_600_000 - 10_000)
    })
  }

  it('Retry-After on 429 raises the delay (seconds form)', async () => {
    const { d, t0 } = await firstAttempt({ status: 429, headers: { 'retry-after': '7200' } }, { retry_schedule: ['1s'] })
    expect(Date.parse(d.next_attempt_at!) - t0).toBeGreaterThanOrEqual(7_200_000 - 1000)
  })

  it('Retry-After on 503 as an HTTP date raises the delay', async () => {
    const at = new Date(Date.now() + 3 * 3_600_000).toUTCString()
    const { d, t0 } = await firstAttempt({ status: 503, headers: { 'retry-after': at } }, { retry_schedule: ['1s'] })
    expect(Date.parse(d.next_attempt_at!) - t0).toBeGreaterThan(3 * 3_600_000 - 5000)
  })

  it('Retry-After on a 500 is ignored', async () => {
    const { d, t0 } = await firstAttempt({ status: 500, headers: { 'retry-after': '7200' } }, { retry_schedule: ['1s'] })
    expect(Date.parse(d.next_attempt_at!) - t0).toBeLessThan(5000)
  })

  it('410 Gone is dead and disables the endpoint with reason gone, killing its pending deliveries', async () => {
    rx = await startReceiver({ status: 410 })
    h = await webhookHarness()
    const ep = await h.webhooks.endpoints.create({ url: rx.url, max_concurrency: 1 })
    await h.webhooks.events.send({ type: 'a', data: {} })
    await h.webhooks.events.send({ type: 'a', data: {} })
    h.dispatcher.start()
    await until(async () => (await h.webhooks.endpoints.get(ep.id)).disabled)
    expect(await h.webhooks.endpoints.get(ep.id)).toMatchObject({ disabled: true, disabled_reason: 'gone' })
    // The disable commits before the 410's own outcome (health first, then the settle batch).
    await until(async () => (await h.webhooks.deliveries.list({ endpoint_id: ep.id, status: 'dead' })).data.length === 2)
    const [second, first] = (await h.webhooks.deliveries.list({ endpoint_id: ep.id })).data
    expect(first).toMatchObject({ status: 'dead', last_error: 'gone', last_status_code: 410 })
    expect(second).toMatchObject({ status: 'dead', last_error: 'endpoint_disabled', attempt_count: 0 })
    expect(rx.requests).toHaveLength(1)
    expect((await h.webhooks.events.send({ type: 'a', data: {} })).deliveries).toBe(0)
  })

  it('3xx is dead and the redirect is not followed', async () => {
    const target = await startReceiver()
    try {
      const { d } = await firstAttempt({ status: 302, headers: { location: `${target.url}/elsewhere` } })
      expect(d.status).toBe('dead')
      expect(d.last_error).toBe('redirect_not_followed')
      expect(target.requests).toHaveLength(0)
    } finally {
      await target.close()
    }
  })

  for (const status of [400, 401, 404, 422]) {
    it(`${status} is dead`, async () => {
      const { d } = await firstAttempt({ status })
      expect(d.status).toBe('dead')
      expect(d.attempts[0]).toMatchObject({ outcome: 'dead', status_code: status })
    })
  }

  it('a refused connection is retried with a transport error', async () => {
    const tmp = await startReceiver()
    const url = tmp.url
    await tmp.close()
    h = await webhookHarness()
    await h.webhooks.endpoints.create({ url, retry_schedule: ['1h'] })
    await h.webhooks.events.send({ type: 'a', data: {} })
    h.dispatcher.start()
    const d = await until(async () => (await h.webhooks.deliveries.list()).data.find((x) => x.attempt_count === 1 && x.status === 'pending'))
    expect((await h.webhooks.deliveries.get(d.id)).attempts).toMatchObject([{ outcome: 'retry', status_code: null, error: 'connection_refused' }])
  })

  it('a receiver slower than timeout_ms is cut off and retried with error timeout', async () => {
    const t = Date.now()
    const { d } = await firstAttempt({ status: 200, delayMs: 3000 }, { timeout_ms: 1000 })
    expect(d.status).toBe('pending')
    expect(d.attempts[0]).toMatchObject({ outcome: 'retry', error: 'timeout' })
    expect(d.attempts[0]!.duration_ms).toBeGreaterThanOrEqual(950)
    expect(Date.now() - t).toBeLessThan(2900)
  })

  // PostgreSQL's text cannot hold a NUL: the settle would fail, and the row stay in flight.
  it('a NUL in a response body is kept as U+FFFD, and the delivery settles', async () => {
    const { d } = await firstAttempt({ status: 500, body: 'a\u0000b\u0000' })
    expect(d.status).toBe('pending')
    expect(d.attempts).toMatchObject([{ outcome: 'retry', status_code: 500, response_body: 'a\uFFFDb\uFFFD' }])
  })

  it('keeps at most 16 KiB of a large response body', async () => {
    const { d } = await firstAttempt({ status: 200, body: 'x'.repeat(100_000) })
    expect(d.attempts[0]!.response_body).toHaveLength(16 * 1024)
  })
})
