/** Durable HTTP requests end to end against real receivers on 127.0.0.1 (docs/requests.md). */
import { Webhook } from 'standardwebhooks'
import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../src/lib/clock.js'
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

/** Awaits `cond` every 10 ms until it gives something truthy; fails after `timeoutMs`. */
async function eventually<T>(cond: () => Promise<T | null | false | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await cond()
    if (v) return v
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** Lets the dispatcher run a few poll ticks (20 ms each) without anything being due. */
const ticks = (n = 5) => new Promise((r) => setTimeout(r, 20 * n))

const SECRET = 'whsec_' + Buffer.alloc(32, 7).toString('base64')

describe('POST /v1/requests: what the receiver sees', () => {
  it('sends each method with exactly the stored method, path, headers and body', async () => {
    const rx = await receiver({ status: 200, body: 'done' })
    f = await apiFixture({ pollIntervalMs: 20 })
    f.pb.start()
    const ids: string[] = []
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'GET'] as const) {
      const body = method === 'GET' ? undefined : { order: 42, method, nested: { a: [1, 2] } }
      const r = await f.json('POST', '/v1/requests', {
        key: f.keys.publisher,
        body: { url: `${rx.url}/orders/42?m=${method}`, method, headers: { 'X-Custom': `v-${method}` }, ...(body ? { body } : {}) },
      })
      expect(r.status).toBe(202)
      expect(r.body).toMatchObject({ deduplicated: false, method, status: 'pending' })
      expect(r.body.id).toMatch(/^req_[0-9a-z]{26}$/)
      ids.push(r.body.id)
    }
    await rx.waitFor(5)
    for (const [i, method] of (['POST', 'PUT', 'PATCH', 'DELETE', 'GET'] as const).entries()) {
      const got = rx.requests.find((q) => q.method === method)!
      expect(got.path).toBe(`/orders/42?m=${method}`)
      expect(got.headers['x-custom']).toBe(`v-${method}`)
      expect(got.headers['postbox-request-id']).toBe(ids[i])
      expect(got.headers['postbox-attempt']).toBe('1')
      expect(got.headers['webhook-signature']).toBeUndefined()
      expect(got.headers['user-agent']).toMatch(/^Postbox\//)
      if (method === 'GET') {
        expect(got.body).toBe('')
        expect(got.headers['content-type']).toBeUndefined()
      } else {
        expect(got.body).toBe(JSON.stringify({ order: 42, method, nested: { a: [1, 2] } }))
        expect(got.headers['content-type']).toBe('application/json')
      }
    }
    const done = await eventually(async () => {
      const r = await f!.json('GET', `/v1/requests/${ids[0]}`)
      return r.body.status === 'success' ? r.body : null
    })
    expect(done.attempts).toEqual([expect.objectContaining({ attempt: 1, outcome: 'success', status_code: 200, response_body: 'done' })])
    expect(done.body).toEqual({ order: 42, method: 'POST', nested: { a: [1, 2] } })
  })

  it('sends a string body byte for byte with its own content-type, or text/plain', async () => {
    const rx = await receiver()
    f = await apiFixture({ pollIntervalMs: 20 })
    f.pb.start()
    const csv = 'a,b\n1,"ü ☃"\r\n'
    await f.json('POST', '/v1/requests', { key: f.keys.publisher, body: { url: rx.url, body: csv, headers: { 'content-type': 'text/csv' } } })
    await f.json('POST', '/v1/requests', { key: f.keys.publisher, body: { url: `${rx.url}/plain`, method: 'PUT', body: '{"not":"parsed"' } })
    await rx.waitFor(2)
    const a = rx.requests.find((q) => q.path === '/')!
    expect(a.body).toBe(csv)
    expect(a.headers['content-type']).toBe('text/csv')
    const b = rx.requests.find((q) => q.path === '/plain')!
    expect(b.body).toBe('{"not":"parsed"')
    expect(b.headers['content-type']).toBe('text/plain; charset=utf-8')
  })

  it('signs with signing_secret so the standardwebhooks library verifies it; webhook-id is the request id', async () => {
    const rx = await receiver()
    f = await apiFixture({ pollIntervalMs: 20 })
    f.pb.start()
    const r = await f.json('POST', '/v1/requests', { key: f.keys.publisher, body: { url: rx.url, body: { paid: true }, signing_secret: SECRET } })
    expect(r.body.signed).toBe(true)
    expect(JSON.stringify(r.body)).not.toContain(SECRET.slice(6))
    const [got] = await rx.waitFor(1)
    expect(got!.headers['webhook-id']).toBe(r.body.id)
    const wh = new Webhook(SECRET)
    expect(wh.verify(got!.body, got!.headers as Record<string, string>)).toEqual({ paid: true })
    expect(() => new Webhook('whsec_' + Buffer.alloc(32, 8).toString('base64')).verify(got!.body, got!.headers as Record<string, string>)).toThrow()
  })

  it("custom headers never override Postbox's own", async () => {
    f = await apiFixture()
    for (const name of ['postbox-request-id', 'Postbox-Attempt', 'webhook-signature', 'user-agent', 'host', 'content-length']) {
      const r = await f.json('POST', '/v1/requests', { body: { url: 'https://example.com/', headers: { [name]: 'x' } } })
      expect(r.status, name).toBe(400)
      expect(r.body.error.code).toBe('validation_failed')
    }
    const json = await f.json('POST', '/v1/requests', { body: { url: 'https://example.com/', body: { a: 1 }, headers: { 'content-type': 'text/plain' } } })
    expect(json.status).toBe(400)
    const get = await f.json('POST', '/v1/requests', { body: { url: 'https://example.com/', method: 'GET', body: 'x' } })
    expect(get.status).toBe(400)
  })

  it('checks the request: url, method, timeout, schedule, secret, app id, schedule window', async () => {
    f = await apiFixture()
    const bad: unknown[] = [
      {},
      { url: 'ftp://example.com/' },
      { url: 'https://user:pw@example.com/' },
      { url: 'https://example.com/', method: 'CONNECT' },
      { url: 'https://example.com/', timeout_ms: 10 },
      { url: 'https://example.com/', retry_schedule: ['2d'] },
      { url: 'https://example.com/', signing_secret: 'not-a-secret' },
      { url: 'https://example.com/', app_id: 'has space' },
      { url: 'https://example.com/', delay: '31d' },
      { url: 'https://example.com/', deliver_at: new Date(Date.now() + 31 * 86_400_000).toISOString() },
      { url: 'https://example.com/', delay: '1m', deliver_at: new Date().toISOString() },
      { url: 'https://example.com/', deliver_at: 'tomorrow' },
    ]
    for (const body of bad) {
      const r = await f.json('POST', '/v1/requests', { body })
      expect(r.status, JSON.stringify(body)).toBe(400)
    }
    const viewer = await f.json('POST', '/v1/requests', { key: f.keys.viewer, body: { url: 'https://example.com/' } })
    expect(viewer.status).toBe(403)
  })
})

describe('retries, dead, redeliver and cancel (injected clock)', () => {
  it('retries through 503 and Retry-After, is dead after its schedule, and redeliver sends it again', async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1))
    const rx = await receiver((_q, i) => (i === 0 ? { status: 503, headers: { 'retry-after': '120' }, body: 'busy' } : { status: 503 }))
    f = await apiFixture({ pollIntervalMs: 20, clock, rng: () => 0.5 })
    f.pb.start()
    const r = await f.json('POST', '/v1/requests', { body: { url: rx.url, body: 'x', retry_schedule: ['1s', '1s'] } })
    const id = r.body.id as string
    await rx.waitFor(1)
    const first = await eventually(async () => {
      const g = await f!.json('GET', `/v1/requests/${id}`)
      return g.body.attempts.length === 1 && g.body.status === 'pending' ? g.body : null
    })
    // Retry-After (120 s) beats the schedule's 1 s.
    expect(first.next_attempt_at).toBe(new Date(clock.now() + 120_000).toISOString())
    clock.advance(60_000)
    await ticks()
    expect(rx.requests).toHaveLength(1)
    clock.advance(60_000)
    await rx.waitFor(2)
    await eventually(async () => (await f!.json('GET', `/v1/requests/${id}`)).body.attempts.length === 2)
    clock.advance(1_000)
    await rx.waitFor(3)
    const dead = await eventually(async () => {
      const g = await f!.json('GET', `/v1/requests/${id}`)
      return g.body.status === 'dead' ? g.body : null
    })
    expect(dead.attempts.map((a: { outcome: string }) => a.outcome)).toEqual(['retry', 'retry', 'dead'])
    expect(dead.last_status_code).toBe(503)
    expect(rx.requests.map((q) => q.headers['postbox-attempt'])).toEqual(['1', '2', '3'])

    rx.reply({ status: 200 })
    expect((await f.json('POST', '/v1/requests/req_00000000000000000000000000/redeliver')).status).toBe(404)
    expect((await f.json('POST', `/v1/requests/${id}/redeliver`, { key: f.keys.publisher })).status).toBe(403)
    const again = await f.json('POST', `/v1/requests/${id}/redeliver`)
    expect(again).toEqual({ status: 202, body: { id, status: 'pending' } })
    const second = await f.json('POST', `/v1/requests/${id}/redeliver`)
    expect(second.status === 409 || second.status === 202).toBe(true)
    await eventually(async () => (await f!.json('GET', `/v1/requests/${id}`)).body.status === 'success')
    const ok = (await f.json('GET', `/v1/requests/${id}`)).body
    // A second redeliver that came after the first one's success (202) sent it once more.
    expect(ok.attempts).toHaveLength(second.status === 202 ? 5 : 4)
    expect(ok.attempt_count).toBe(1)
  })

  it('redeliver of a pending request is 409 not_eligible', async () => {
    f = await apiFixture()
    const r = await f.json('POST', '/v1/requests', { body: { url: 'https://example.com/', delay: '1h' } })
    const again = await f.json('POST', `/v1/requests/${r.body.id}/redeliver`)
    expect(again.status).toBe(409)
    expect(again.body.error.code).toBe('not_eligible')
  })

  it('cancels while pending (nothing is sent) and answers 409 after', async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1))
    const rx = await receiver()
    f = await apiFixture({ pollIntervalMs: 20, clock })
    f.pb.start()
    const r = await f.json('POST', '/v1/requests', { key: f.keys.publisher, body: { url: rx.url, delay: '10m' } })
    expect(r.body.deliver_at).toBe(new Date(clock.now() + 600_000).toISOString())
    const c = await f.json('DELETE', `/v1/requests/${r.body.id}`, { key: f.keys.publisher })
    expect(c.status).toBe(200)
    expect(c.body).toMatchObject({ id: r.body.id, status: 'cancelled', last_error: 'cancelled' })
    const again = await f.json('DELETE', `/v1/requests/${r.body.id}`)
    expect(again.status).toBe(409)
    expect(again.body.error.code).toBe('not_eligible')
    expect((await f.json('DELETE', '/v1/requests/req_00000000000000000000000000')).status).toBe(404)
    expect((await f.json('DELETE', '/v1/requests/dlv_00000000000000000000000000')).status).toBe(404)
    clock.advance(3_600_000)
    await ticks()
    expect(rx.requests).toHaveLength(0)
    // A finished request also refuses a cancel.
    const s = await f.json('POST', '/v1/requests', { body: { url: rx.url } })
    await rx.waitFor(1)
    await eventually(async () => (await f!.json('GET', `/v1/requests/${s.body.id}`)).body.status === 'success')
    expect((await f.json('DELETE', `/v1/requests/${s.body.id}`)).status).toBe(409)
  })

  it("deleting an application cancels its pending requests (docs/applications.md), and only its own", async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1))
    const rx = await receiver()
    f = await apiFixture({ pollIntervalMs: 20, clock })
    f.pb.start()
    await f.json('POST', '/v1/apps', { body: { id: 'gone', name: 'gone' } })
    const mine = await f.json('POST', '/v1/requests', { body: { url: rx.url, delay: '10m', app_id: 'gone' } })
    const other = await f.json('POST', '/v1/requests', { body: { url: rx.url, delay: '10m' } })
    const del = await f.json('DELETE', '/v1/apps/gone')
    expect(del.status).toBe(200)
    expect(del.body.cancelled).toBe(1)
    expect((await f.json('GET', `/v1/requests/${mine.body.id}`)).body).toMatchObject({ status: 'cancelled', last_error: 'app_deleted' })
    expect((await f.json('GET', `/v1/requests/${other.body.id}`)).body.status).toBe('pending')
    clock.advance(3_600_000)
    await rx.waitFor(1)
    await ticks()
    expect(rx.requests).toHaveLength(1)
  })

  it('dedups per (app_id, dedup_key): a repeat is 200 with the original', async () => {
    f = await apiFixture()
    const body = { url: 'https://example.com/a', dedup_key: 'order-42', delay: '1h' }
    const a = await f.json('POST', '/v1/requests', { body })
    const b = await f.json('POST', '/v1/requests', { body: { ...body, url: 'https://example.com/other' } })
    expect(a.status).toBe(202)
    expect(b.status).toBe(200)
    expect(b.body).toMatchObject({ id: a.body.id, deduplicated: true, url: 'https://example.com/a' })
    expect((await f.json('POST', '/v1/apps', { body: { id: 'shop', name: 'Shop' } })).status).toBe(201)
    const other = await f.json('POST', '/v1/requests', { body: { ...body, app_id: 'shop' } })
    expect(other.status).toBe(202)
    expect(other.body.id).not.toBe(a.body.id)
    expect(other.body.app_id).toBe('shop')
    const h1 = await f.json('POST', '/v1/requests', { body: { url: 'https://example.com/h', delay: '1h' }, headers: { 'idempotency-key': 'idem-1' } })
    const h2 = await f.json('POST', '/v1/requests', { body: { url: 'https://example.com/h', delay: '1h' }, headers: { 'idempotency-key': 'idem-1' } })
    expect([h1.status, h2.status, h2.body.id, h2.body.dedup_key]).toEqual([202, 200, h1.body.id, 'idem-1'])
    const clash = await f.json('POST', '/v1/requests', { body: { url: 'https://example.com/h', dedup_key: 'a' }, headers: { 'idempotency-key': 'b' } })
    expect(clash.status).toBe(400)
    const list = await f.json('GET', '/v1/requests?app_id=shop')
    expect(list.body.data.map((x: { id: string }) => x.id)).toEqual([other.body.id])
  })

  it('lists by status, source and ref_id with a cursor', async () => {
    f = await apiFixture()
    const made: string[] = []
    for (let i = 0; i < 5; i++) {
      const r = await f.json('POST', '/v1/requests', { body: { url: 'https://example.com/', delay: '1h', source: i % 2 ? 'odd' : 'even', ref_id: `r${i}` } })
      made.push(r.body.id)
    }
    await f.json('DELETE', `/v1/requests/${made[0]}`)
    const even = await f.json('GET', '/v1/requests?source=even&limit=2')
    expect(even.body.data.map((x: { id: string }) => x.id)).toEqual([made[4], made[2]])
    const rest = await f.json('GET', `/v1/requests?source=even&limit=2&cursor=${even.body.next_cursor}`)
    expect(rest.body.data.map((x: { id: string }) => x.id)).toEqual([made[0]])
    expect(rest.body.next_cursor).toBeNull()
    expect((await f.json('GET', '/v1/requests?ref_id=r3')).body.data.map((x: { id: string }) => x.id)).toEqual([made[3]])
    expect((await f.json('GET', '/v1/requests?status=cancelled')).body.data.map((x: { id: string }) => x.id)).toEqual([made[0]])
    expect((await f.json('GET', '/v1/requests?status=pending')).body.data).toHaveLength(4)
    expect((await f.json('GET', '/v1/requests?cursor=bogus')).status).toBe(400)
    expect((await f.json('GET', '/v1/requests?status=nope')).status).toBe(400)
    // The request is a delivery of channel `request` in the one queue.
    const d = await f.json('GET', `/v1/deliveries/${(await f.json('GET', `/v1/requests/${made[1]}`)).body.delivery_id}`)
    expect(d.body.channel).toBe('request')
  })
})

describe('destination safety', () => {
  it('refuses private literals at create (422 destination_not_allowed)', async () => {
    f = await apiFixture({ allowNetworks: [] })
    for (const url of ['http://10.0.0.1/x', 'http://127.0.0.1:8080/', 'http://[::1]/', 'http://169.254.169.254/latest/meta-data', 'http://[::ffff:192.168.0.1]/', 'http://100.64.0.1/']) {
      const r = await f.json('POST', '/v1/requests', { key: f.keys.publisher, body: { url } })
      expect(r.status, url).toBe(422)
      expect(r.body.error.code).toBe('destination_not_allowed')
    }
  })

  it('refuses a hostname that resolves to loopback at connect, unless its network is allowed', async () => {
    const rx = await receiver()
    f = await apiFixture({ allowNetworks: [], pollIntervalMs: 20 })
    f.pb.start()
    const r = await f.json('POST', '/v1/requests', { body: { url: `http://localhost:${rx.port}/x` } })
    expect(r.status).toBe(202)
    const dead = await eventually(async () => {
      const g = await f!.json('GET', `/v1/requests/${r.body.id}`)
      return g.body.status === 'dead' ? g.body : null
    })
    expect(dead.last_error).toBe('destination_not_allowed')
    expect(dead.attempts).toHaveLength(1)
    expect(rx.requests).toHaveLength(0)
    await f.close()

    f = await apiFixture({ allowNetworks: ['127.0.0.0/8', '::1/128'], pollIntervalMs: 20 })
    f.pb.start()
    const ok = await f.json('POST', '/v1/requests', { body: { url: `http://localhost:${rx.port}/y` } })
    await rx.waitFor(1)
    await eventually(async () => (await f!.json('GET', `/v1/requests/${ok.body.id}`)).body.status === 'success')
    expect(rx.requests[0]!.path).toBe('/y')
  })

  it('never follows a redirect: the request is dead with redirect_not_followed', async () => {
    const rx = await receiver((q) => (q.path === '/start' ? { status: 302, headers: { location: '/elsewhere' } } : { status: 200 }))
    f = await apiFixture({ pollIntervalMs: 20 })
    f.pb.start()
    const r = await f.json('POST', '/v1/requests', { body: { url: `${rx.url}/start` } })
    const dead = await eventually(async () => {
      const g = await f!.json('GET', `/v1/requests/${r.body.id}`)
      return g.body.status === 'dead' ? g.body : null
    })
    expect(dead.last_error).toBe('redirect_not_followed')
    expect(dead.last_status_code).toBe(302)
    expect(rx.requests.map((q) => q.path)).toEqual(['/start'])
  })
})

describe('isolation per origin', () => {
  it('200 requests to a host that never answers do not delay 200 to a healthy host', async () => {
    const dead = await receiver({ hang: true })
    const healthy = await receiver({ status: 200 })
    f = await apiFixture({ pollIntervalMs: 20, shutdownTimeoutMs: 100 })
    f.pb.start()
    for (let i = 0; i < 200; i++) await f.pb.requests.create({ url: `${dead.url}/d${i}`, timeout_ms: 60_000 })
    for (let i = 0; i < 200; i++) await f.pb.requests.create({ url: `${healthy.url}/h${i}` })
    await healthy.waitFor(200, 20_000)
    await until(async () => (await f!.pb.requests.list({ status: 'success', limit: 200 })).data.length === 200, 20_000, 'all healthy requests settled')
    // The dead host holds at most its origin's 16 slots; the rest of its requests wait, pending.
    expect(dead.requests.length).toBeGreaterThan(0)
    expect(dead.requests.length).toBeLessThanOrEqual(16)
    expect((await f.pb.requests.list({ status: 'pending', limit: 200 })).data.length).toBeGreaterThanOrEqual(184)
  })

  it('a failing origin opens its own breaker and defers only its own requests', async () => {
    const failing = await receiver({ status: 500 })
    const healthy = await receiver({ status: 200 })
    f = await apiFixture({ pollIntervalMs: 20 })
    // All queued before the first attempt: a row created after the breaker opened is not deferred
    // (it waits for the origin's slots instead), and on PostgreSQL the creates are slower than a 500.
    for (let i = 0; i < 20; i++) await f.pb.requests.create({ url: `${failing.url}/f${i}`, retry_schedule: ['10ms', '10ms', '10ms', '10ms', '10ms', '10ms', '10ms'] })
    f.pb.start()
    await until(async () => (await f!.pb.requests.list({ status: 'pending', limit: 200 })).data.some((r) => r.next_attempt_at !== null && Date.parse(r.next_attempt_at) > Date.now() + 20_000), 10_000, 'breaker pause')
    for (let i = 0; i < 20; i++) await f.pb.requests.create({ url: `${healthy.url}/h${i}` })
    await healthy.waitFor(20)
    await until(async () => (await f!.pb.requests.list({ status: 'success', limit: 200 })).data.length === 20)
    await ticks()
    // Paused (30 s): each failing request went out once (those claimed before the breaker
    // opened), none a second time although its schedule says 10 ms; nothing was lost.
    expect(failing.requests.length).toBeLessThanOrEqual(20)
    const waiting = (await f.pb.requests.list({ status: 'pending', limit: 200 })).data
    expect(waiting).toHaveLength(20)
    for (const r of waiting) expect(r.attempt_count).toBeLessThanOrEqual(1)
    // The rows still queued when it opened wait for the pause's end.
    const unsent = waiting.filter((r) => r.attempt_count === 0)
    for (const r of unsent) expect(Date.parse(r.next_attempt_at!)).toBeGreaterThan(Date.now() + 20_000)
  })
})
