import { afterEach, describe, expect, it } from 'vitest'
import { circuitState } from '../src/delivery/breaker.js'
import { ManualClock } from '../src/lib/clock.js'
import { startReceiver, type Receiver } from './support/receiver.js'
import { until, webhookHarness, type WebhookHarness } from './support/webhooks-harness.js'

let h: WebhookHarness
const receivers: Receiver[] = []
const rx = async (...args: Parameters<typeof startReceiver>): Promise<Receiver> => {
  const r = await startReceiver(...args)
  receivers.push(r)
  return r
}
const settle = (ms = 60): Promise<void> => new Promise((r) => setTimeout(r, ms))

afterEach(async () => {
  await h?.close()
  await Promise.all(receivers.splice(0).map((r) => r.close()))
})

const zeros = (n: number): number[] => Array.from({ length: n }, () => 0)

describe('isolation and flow control', () => {
  it('a stuck endpoint does not delay a fast one', async () => {
    const slow = await rx({ hang: true })
    const fast = await rx()
    h = await webhookHarness()
    await h.webhooks.endpoints.create({ url: slow.url, max_concurrency: 2 })
    await h.webhooks.endpoints.create({ url: fast.url })
    for (let i = 0; i < 40; i++) await h.webhooks.events.send({ type: 'a', data: { i } })
    h.dispatcher.start()
    await until(async () => (await h.webhooks.deliveries.list({ status: 'success', limit: 200 })).data.length === 40)
    expect(fast.requests).toHaveLength(40)
    expect(slow.requests).toHaveLength(2)
    expect(h.dispatcher.inFlight()).toBe(2)
  })

  it('endpoints holding many requests cannot take the last slots of the global cap', async () => {
    const slow = await rx({ hang: true })
    const fast = await rx()
    // A cap of 16 keeps 2 slots for endpoints with fewer than 4 requests in flight.
    h = await webhookHarness({ config: { concurrency: 16 } })
    await h.webhooks.endpoints.create({ url: slow.url, max_concurrency: 16, timeout_ms: 60_000, event_types: ['slow.*'] })
    await h.webhooks.endpoints.create({ url: fast.url, event_types: ['fast.*'] })
    for (let i = 0; i < 40; i++) await h.webhooks.events.send({ type: 'slow.a', data: { i } })
    h.dispatcher.start()
    await slow.waitFor(14)
    await settle()
    expect(slow.requests).toHaveLength(14)
    for (let i = 0; i < 6; i++) await h.webhooks.events.send({ type: 'fast.a', data: { i } })
    await until(() => fast.requests.length === 6, 5000, 'the fast endpoint to get every event')
    expect(slow.requests).toHaveLength(14)
  })

  it('never claims more than the global concurrency cap', async () => {
    const slow = await rx({ hang: true })
    h = await webhookHarness({ config: { concurrency: 3 } })
    await h.webhooks.endpoints.create({ url: slow.url })
    for (let i = 0; i < 10; i++) await h.webhooks.events.send({ type: 'a', data: {} })
    h.dispatcher.start()
    await slow.waitFor(3)
    await settle()
    expect(slow.requests).toHaveLength(3)
    expect((await h.webhooks.deliveries.list({ status: 'in_flight' })).data).toHaveLength(3)
    expect((await h.webhooks.deliveries.list({ status: 'pending' })).data).toHaveLength(7)
  })

  it('rate_limit spends one token per request', async () => {
    const clock = new ManualClock()
    const r = await rx()
    h = await webhookHarness({ clock })
    await h.webhooks.endpoints.create({ url: r.url, rate_limit: 2 })
    for (let i = 0; i < 5; i++) await h.webhooks.events.send({ type: 'a', data: {} })
    h.dispatcher.start()
    await r.waitFor(2)
    await settle()
    expect(r.requests).toHaveLength(2)
    clock.advance(1000)
    await r.waitFor(4)
    await settle()
    expect(r.requests).toHaveLength(4)
  })
})

describe('endpoint health (docs/delivery.md)', () => {
  it('opens the breaker after 5 consecutive 5xx, sends one probe after the pause, doubles on failure, closes on success', async () => {
    const clock = new ManualClock()
    const r = await rx({ status: 500 })
    h = await webhookHarness({ clock })
    const ep = await h.webhooks.endpoints.create({ url: r.url, max_concurrency: 1, retry_schedule: zeros(20) })
    for (let i = 0; i < 3; i++) await h.webhooks.events.send({ type: 'a', data: {} })
    h.dispatcher.start()
    await r.waitFor(5)
    await settle()
    expect(r.requests).toHaveLength(5)
    expect(await h.webhooks.endpoints.get(ep.id)).toMatchObject({ circuit: 'open', consecutive_failures: 5 })
    // The rows still queued wait for the end of the pause instead of being due all along.
    const pausedUntil = new Date(clock.now() + 30_000).toISOString()
    const queued = (await h.webhooks.deliveries.list({ status: 'pending', endpoint_id: ep.id })).data
    expect(queued.length).toBeGreaterThan(0)
    for (const d of queued) expect(d.next_attempt_at! >= pausedUntil).toBe(true)

    clock.advance(30_000)
    expect((await h.webhooks.endpoints.get(ep.id)).circuit).toBe('half_open')
    h.dispatcher.wake()
    await r.waitFor(6)
    await until(async () => (await h.webhooks.endpoints.get(ep.id)).circuit === 'open')
    await settle()
    expect(r.requests).toHaveLength(6)
    clock.advance(59_000)
    h.dispatcher.wake()
    await settle()
    expect(r.requests).toHaveLength(6)

    r.reply({ status: 200 })
    clock.advance(1000)
    h.dispatcher.wake()
    await until(async () => (await h.webhooks.deliveries.list({ status: 'success' })).data.length === 3)
    expect(await h.webhooks.endpoints.get(ep.id)).toMatchObject({ circuit: 'closed', consecutive_failures: 0 })
    expect((await h.webhooks.endpoints.get(ep.id)).last_success_at).toBe(new Date(clock.now()).toISOString())
  })

  it('tells one truth: open with paused_until while a pause holds the rows, and a success closes it and releases them at once', async () => {
    // The reported case: 12 failures, then slow successes that were in flight meanwhile.
    const clock = new ManualClock()
    let open: () => void = () => {}
    const gate = new Promise<void>((resolve) => (open = resolve))
    const r = await rx(async (_req, i) => (i < 12 ? { status: 500 } : (await gate, { status: 200 })))
    h = await webhookHarness({ clock })
    const ep = await h.webhooks.endpoints.create({ url: r.url, max_concurrency: 16, retry_schedule: zeros(20) })
    for (let i = 0; i < 40; i++) await h.webhooks.events.send({ type: 'a', data: { i } })
    h.dispatcher.start()
    await r.waitFor(16)
    await until(async () => (await h.webhooks.endpoints.get(ep.id)).circuit === 'open')
    await settle()
    const pausedUntil = new Date(clock.now() + 30_000).toISOString()
    expect(await h.webhooks.endpoints.get(ep.id)).toMatchObject({ circuit: 'open', paused_until: pausedUntil })
    // The metric and `postbox stats` read the same columns through the same function.
    const [health] = await h.store.stats.endpointHealth()
    expect(circuitState(health!, clock.now())).toBe('open')
    expect(circuitState((await h.store.stats.endpointStates())[0]!, clock.now())).toBe('open')
    // Nothing more goes out while it is open.
    const sent = r.requests.length
    h.dispatcher.wake()
    await settle()
    expect(r.requests).toHaveLength(sent)

    // The four slow successes land: the breaker closes and every held row goes now, with no
    // clock movement (before, they stayed parked until the pause's end).
    open()
    await until(async () => (await h.webhooks.deliveries.list({ status: 'success', limit: 200 })).data.length === 40, 5000, 'every delivery')
    expect(await h.webhooks.endpoints.get(ep.id)).toMatchObject({ circuit: 'closed', paused_until: null, consecutive_failures: 0 })
    expect((await h.store.stats.endpointHealth())[0]).toMatchObject({ pausedUntil: null, pauseCount: 0 })
  })

  for (const [name, fails] of [
    ['every other request', (i: number) => i % 2 === 1],
    ['in blocks of five', (i: number) => Math.floor(i / 5) % 2 === 1],
  ] as const) {
    it(`keeps sending to a receiver failing half of its requests (${name}): the breaker never opens`, async () => {
      const clock = new ManualClock()
      const r = await rx((_req, i) => ({ status: fails(i) ? 503 : 200 }))
      h = await webhookHarness({ clock })
      const ep = await h.webhooks.endpoints.create({ url: r.url, max_concurrency: 1, retry_schedule: zeros(20) })
      for (let i = 0; i < 60; i++) await h.webhooks.events.send({ type: 'a', data: { i } })
      h.dispatcher.start()
      // A pause would hold everything until the (never advanced) clock reached its end.
      await until(async () => (await h.webhooks.deliveries.list({ status: 'success', limit: 200 })).data.length === 60, 10_000, 'every delivery')
      expect(r.requests.length).toBeGreaterThanOrEqual(110)
      expect(await h.store.endpoints.get(ep.id)).toMatchObject({ pauseCount: 0, pausedUntil: null })
    })
  }

  it('takes the threshold and pauses from the endpoint, over the global settings', async () => {
    const clock = new ManualClock()
    const r = await rx({ status: 500 })
    h = await webhookHarness({ clock, config: { breakerPauseMs: 60_000 } })
    const ep = await h.webhooks.endpoints.create({ url: r.url, max_concurrency: 1, retry_schedule: zeros(20), breaker_pause_ms: 5000 })
    expect(ep).toMatchObject({ breaker_pause_ms: 5000, breaker_threshold: null, breaker_max_pause_ms: null })
    await h.webhooks.events.send({ type: 'a', data: {} })
    h.dispatcher.start()
    await until(async () => (await h.webhooks.endpoints.get(ep.id)).circuit === 'open')
    expect((await h.webhooks.endpoints.get(ep.id)).paused_until).toBe(new Date(clock.now() + 5000).toISOString())
    expect(r.requests).toHaveLength(5)
    const other = await h.webhooks.endpoints.update(ep.id, { breaker_threshold: 100, breaker_pause_ms: null })
    expect(other).toMatchObject({ breaker_threshold: 100, breaker_pause_ms: null })
    let details: unknown
    try {
      await h.webhooks.endpoints.update(ep.id, { breaker_threshold: 0 })
    } catch (err) {
      details = (err as { details?: unknown }).details
    }
    expect(JSON.stringify(details)).toContain('breaker_threshold')
  })

  it('reports every failure since the last success in consecutive_failures, 4xx and 429 too, without opening the breaker', async () => {
    const clock = new ManualClock()
    let open: () => void = () => {}
    const gate = new Promise<void>((resolve) => (open = resolve))
    // Six failures (404, 400 and 403 are dead at once; 429 and 500 are retried), then successes.
    const r = await rx(async (_req, i) => (i < 6 ? { status: [404, 429, 400, 500, 404, 403][i]! } : (await gate, { status: 200 })))
    h = await webhookHarness({ clock })
    const ep = await h.webhooks.endpoints.create({ url: r.url, max_concurrency: 1, retry_schedule: zeros(8) })
    expect(await h.webhooks.endpoints.get(ep.id)).toMatchObject({ consecutive_failures: 0, failing_since: null })
    for (let i = 0; i < 6; i++) await h.webhooks.events.send({ type: 'a', data: { i } })
    h.dispatcher.start()
    await r.waitFor(7)
    await until(async () => (await h.webhooks.endpoints.get(ep.id)).consecutive_failures === 6)
    expect(await h.webhooks.endpoints.get(ep.id)).toMatchObject({ circuit: 'closed', failing_since: new Date(clock.now()).toISOString() })
    open()
    await until(async () => (await h.webhooks.deliveries.list({ status: 'success' })).data.length === 2)
    expect(await h.webhooks.endpoints.get(ep.id)).toMatchObject({ consecutive_failures: 0, failing_since: null })
  })

  it('auto-disables after disableAfterMs with no success and >= 10 failures, and publishes postbox.endpoint.disabled', async () => {
    const clock = new ManualClock()
    const failing = await rx({ status: 400 })
    const ops = await rx()
    const catchAll = await rx()
    h = await webhookHarness({ clock, config: { disableAfterMs: 60_000 } })
    const ep = await h.webhooks.endpoints.create({ url: failing.url, event_types: ['a'] })
    await h.webhooks.endpoints.create({ url: ops.url, event_types: ['postbox.endpoint.disabled'] })
    await h.webhooks.endpoints.create({ url: catchAll.url })
    for (let i = 0; i < 9; i++) await h.webhooks.events.send({ type: 'a', data: {} })
    h.dispatcher.start()
    await until(async () => (await h.webhooks.deliveries.list({ status: 'dead', endpoint_id: ep.id })).data.length === 9)
    expect((await h.webhooks.endpoints.get(ep.id)).disabled).toBe(false)
    clock.advance(61_000)
    await h.webhooks.events.send({ type: 'a', data: {} })
    const [op] = await ops.waitFor(1)
    expect(JSON.parse(op!.body)).toMatchObject({
      type: 'postbox.endpoint.disabled',
      data: { endpoint_id: ep.id, url: failing.url + '/', reason: 'failing' },
    })
    expect(await h.webhooks.endpoints.get(ep.id)).toMatchObject({ disabled: true, disabled_reason: 'failing' })
    await catchAll.waitFor(10)
    await settle()
    expect(catchAll.requests.map((q) => JSON.parse(q.body).type)).not.toContain('postbox.endpoint.disabled')

    // Re-enable, then recover brings the killed deliveries back.
    failing.reply({ status: 200 })
    expect(await h.webhooks.endpoints.enable(ep.id)).toMatchObject({ disabled: false, disabled_reason: null, consecutive_failures: 0 })
    const { queued } = await h.webhooks.endpoints.recover(ep.id, { since: new Date(clock.now() - 3_600_000).toISOString() })
    expect(queued).toBe(10)
    await until(async () => (await h.webhooks.deliveries.list({ status: 'success', endpoint_id: ep.id })).data.length === 10)
  })
})

describe('graceful stop', () => {
  it('releases a claim whose request never went out (attempt refunded)', async () => {
    h = await webhookHarness({ sender: { resolve: (() => {}) as never } })
    await h.webhooks.endpoints.create({ url: 'http://hangs.example:8080/hook' })
    await h.webhooks.events.send({ type: 'a', data: {} })
    h.dispatcher.start()
    await until(() => h.dispatcher.inFlight() === 1)
    expect((await h.webhooks.deliveries.list()).data[0]).toMatchObject({ status: 'in_flight', attempt_count: 1 })
    await h.dispatcher.stop(30)
    const [d] = (await h.webhooks.deliveries.list()).data
    expect(d).toMatchObject({ status: 'pending', attempt_count: 0 })
    expect((await h.webhooks.deliveries.get(d!.id)).attempts).toHaveLength(0)
  })

  it('waits for in-flight requests, then aborts the rest keeping their attempt', async () => {
    const r = await rx((_q, i) => (i === 0 ? { status: 200, delayMs: 50 } : { hang: true }))
    h = await webhookHarness()
    await h.webhooks.endpoints.create({ url: r.url })
    await h.webhooks.events.send({ type: 'a', data: { n: 0 } })
    await h.webhooks.events.send({ type: 'a', data: { n: 1 } })
    h.dispatcher.start()
    await r.waitFor(2)
    await h.dispatcher.stop(500)
    expect(h.dispatcher.inFlight()).toBe(0)
    const [second, first] = (await h.webhooks.deliveries.list()).data
    expect(first!.status).toBe('success')
    expect(second).toMatchObject({ status: 'pending', attempt_count: 1 })
    expect((await h.webhooks.deliveries.get(second!.id)).attempts).toMatchObject([{ outcome: 'retry', error: 'aborted' }])
  })
})
