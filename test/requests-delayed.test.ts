/** Delayed events (deliver_at / delay) with an injected clock, and the library's onAttempt hook (docs/requests.md). */
import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../src/lib/clock.js'
import type { AttemptReport } from '../src/delivery/channel.js'
import { apiFixture, type ApiFixture } from './support/api.js'
import { startReceiver, type Receiver } from './support/receiver.js'
import { until } from './support/webhooks-harness.js'

let f: ApiFixture | null = null
const receivers: Receiver[] = []

afterEach(async () => {
  await f?.close()
  f = null
  for (const r of receivers.splice(0)) await r.close()
})

async function receiver(...args: Parameters<typeof startReceiver>): Promise<Receiver> {
  const r = await startReceiver(...args)
  receivers.push(r)
  return r
}

/** Lets the dispatcher run a few poll ticks (20 ms each) without anything being due. */
const ticks = (n = 5) => new Promise((r) => setTimeout(r, 20 * n))

describe('delayed events (injected clock)', () => {
  it('are written at once, not sent before their time, and sent after', async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1))
    const rx = await receiver()
    f = await apiFixture({ pollIntervalMs: 20, clock })
    f.pb.start()
    await f.json('POST', '/v1/endpoints', { body: { url: rx.url } })
    const a = await f.json('POST', '/v1/events', { key: f.keys.publisher, body: { type: 'later', data: { n: 1 }, delay: '10m' } })
    expect(a.status).toBe(202)
    expect(a.body).toMatchObject({ deliveries: 1, deliver_at: new Date(clock.now() + 600_000).toISOString() })
    const at = new Date(clock.now() + 3_600_000).toISOString()
    const b = await f.json('POST', '/v1/events', { body: { type: 'at', data: {}, deliver_at: at } })
    expect(b.body.deliver_at).toBe(at)
    const batch = await f.json('POST', '/v1/events/batch', { body: { events: [{ type: 'batch', data: {}, delay: '30m' }, { type: 'now', data: {} }] } })
    expect(batch.status).toBe(202)
    const past = await f.json('POST', '/v1/events', { body: { type: 'past', data: {}, deliver_at: '2020-01-01T00:00:00Z' } })
    expect(past.body.deliver_at).toBeUndefined()
    // A jump of the clock past a claim's lease while its request is in flight would offer the row
    // again: each jump waits until the rows sent so far are settled.
    const settled = (n: number) => until(async () => (await f!.json('GET', '/v1/deliveries?status=success')).body.data.length >= n || undefined)
    await rx.waitFor(2)
    await settled(2)
    await ticks()
    expect(rx.requests.map((q) => JSON.parse(q.body).type).sort()).toEqual(['now', 'past'])
    // The deliveries exist already, pending at their time.
    const ev = await f.json('GET', `/v1/events/${a.body.id}`)
    expect(ev.body.deliveries[0]).toMatchObject({ status: 'pending', next_attempt_at: a.body.deliver_at })
    clock.advance(599_000)
    await ticks()
    expect(rx.requests).toHaveLength(2)
    clock.advance(1_000)
    await rx.waitFor(3)
    await settled(3)
    clock.advance(1_200_000)
    await rx.waitFor(4)
    await settled(4)
    await ticks()
    expect(rx.requests).toHaveLength(4)
    clock.advance(1_800_000)
    await rx.waitFor(5)
    // 'now' and 'past' were due together (either may go first); the delayed ones in their order.
    const types = rx.requests.map((q) => JSON.parse(q.body).type as string)
    expect([...types.slice(0, 2).sort(), ...types.slice(2)]).toEqual(['now', 'past', 'later', 'batch', 'at'])
  })

  it('refuses more than 30 days ahead, both fields, and a bad duration (400)', async () => {
    f = await apiFixture()
    for (const extra of [{ delay: '31d' }, { delay: 'soon' }, { deliver_at: new Date(Date.now() + 31 * 86_400_000).toISOString() }, { delay: '1m', deliver_at: new Date().toISOString() }]) {
      const r = await f.json('POST', '/v1/events', { body: { type: 't', data: {}, ...extra } })
      expect(r.status, JSON.stringify(extra)).toBe(400)
    }
    const batch = await f.json('POST', '/v1/events/batch', { body: { events: [{ type: 't', data: {} }, { type: 't', data: {}, delay: '31d' }] } })
    expect(batch.status).toBe(400)
    expect(JSON.stringify(batch.body)).toContain('events.1')
    expect((await f.json('POST', '/v1/events', { body: { type: 't', data: {}, delay: '30d' } })).status).toBe(202)
  })
})

describe('the onAttempt hook', () => {
  it('sees every attempt of every channel, after its outcome is committed', async () => {
    const rx = await receiver((_q, i) => ({ status: i === 0 ? 500 : 200 }))
    const seen: AttemptReport[] = []
    let statusAtCall: string | null = null
    f = await apiFixture({
      pollIntervalMs: 20,
      onAttempt: async (a) => {
        if (a.channel === 'request') statusAtCall = (await f!.pb.store.deliveries.get(a.delivery_id))!.status
        seen.push(a)
      },
    })
    f.pb.start()
    await f.json('POST', '/v1/endpoints', { body: { url: `${rx.url}/hook` } })
    await f.json('POST', '/v1/events', { body: { type: 'a', data: {} } })
    await until(() => seen.length === 2)
    const r = await f.pb.requests.create({ url: `${rx.url}/req`, retry_schedule: ['10ms'] })
    await until(() => seen.length === 3)
    expect(seen.map((a) => [a.channel, a.outcome, a.status_code, a.attempt])).toEqual([
      ['webhook', 'retry', 500, 1],
      ['webhook', 'success', 200, 2],
      ['request', 'success', 200, 1],
    ])
    expect(seen[2]).toMatchObject({ request_id: r.id, delivery_id: r.delivery_id, status: 'success', error: null })
    expect(seen[2]!.duration_ms).toBeGreaterThanOrEqual(0)
    // Called after the commit: the row it names already shows the outcome.
    expect(statusAtCall).toBe('success')
  })

  it('a hook that throws or rejects changes nothing', async () => {
    const rx = await receiver((_q, i) => ({ status: i % 2 === 0 ? 503 : 200 }))
    let calls = 0
    f = await apiFixture({
      pollIntervalMs: 20,
      onAttempt: (a) => {
        calls++
        if (a.outcome === 'retry') throw new Error('hook failed')
        return Promise.reject(new Error('async hook failed'))
      },
    })
    f.pb.start()
    const ids: string[] = []
    for (const i of [0, 1, 2]) ids.push((await f.pb.requests.create({ url: `${rx.url}/${i}`, retry_schedule: ['10ms'] })).id)
    const finished = async (id: string) => !['pending', 'in_flight'].includes((await f!.pb.requests.get(id)).status)
    await until(async () => (await Promise.all(ids.map(finished))).every(Boolean))
    for (const id of ids) {
      const g = await f.pb.requests.get(id)
      expect(g.attempts.length).toBeGreaterThanOrEqual(1)
      expect(g.status === 'success' || g.status === 'dead').toBe(true)
    }
    expect(calls).toBe(rx.requests.length)
    expect((await Promise.all(ids.map((id) => f!.pb.requests.get(id)))).map((g) => g.status)).toContain('success')
  })
})
