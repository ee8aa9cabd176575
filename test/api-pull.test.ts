import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../src/lib/clock.js'
import { Postbox } from '../src/postbox.js'
import { tempDir } from './helpers.js'
import { ADMIN_KEY, apiFixture, type ApiFixture } from './support/api.js'

// Pull endpoints (docs/pull-endpoints.md) on the backend under test. Time is a
// ManualClock: leases and snoozes are proven by moving it, never by sleeping.
describe('pull endpoints', () => {
  let f: ApiFixture
  let clock: ManualClock
  beforeEach(async () => {
    clock = new ManualClock(Date.now())
    f = await apiFixture({ clock })
  })
  afterEach(async () => f.close())

  const pullEndpoint = async (body: Record<string, unknown> = {}): Promise<string> => {
    const r = await f.json('POST', '/v1/endpoints', { body: { mode: 'pull', ...body } })
    expect(r.status).toBe(201)
    return r.body.id as string
  }
  const send = async (type = 'order.created', extra: Record<string, unknown> = {}): Promise<string> => {
    const r = await f.json('POST', '/v1/events', { body: { type, data: { n: 1 }, ...extra } })
    expect(r.status).toBe(202)
    return r.body.id as string
  }
  const claim = async (ep: string, body: Record<string, unknown> = {}, key?: string) => f.json('POST', `/v1/endpoints/${ep}/claim`, { body, ...(key ? { key } : {}) })
  const items = async (ep: string, body: Record<string, unknown> = {}) => {
    const r = await claim(ep, body)
    expect(r.status).toBe(200)
    return r.body.items as { delivery_id: string; claim_token: string; attempt: number; ordering_key: string | null; event: { id: string; type: string } }[]
  }
  const settle = async (ep: string, action: string, body: Record<string, unknown>) => f.json('POST', `/v1/endpoints/${ep}/${action}`, { body })
  const delivery = async (id: string) => (await f.json('GET', `/v1/deliveries/${id}`)).body
  const outcomes = async (id: string): Promise<string[]> => ((await delivery(id)).attempts as { outcome: string }[]).map((a) => a.outcome)

  it('creates a pull endpoint without url or secret, and refuses push-only settings', async () => {
    const r = await f.json('POST', '/v1/endpoints', { body: { mode: 'pull', event_types: ['order.*'] } })
    expect(r).toMatchObject({ status: 201, body: { mode: 'pull', url: '' } })
    expect(r.body.secret).toBeUndefined()
    for (const extra of [{ url: 'https://example.com/h' }, { secret: 'whsec_' + 'A'.repeat(32) }, { signature: 'standard' }]) {
      const bad = await f.json('POST', '/v1/endpoints', { body: { mode: 'pull', ...extra } })
      expect(bad).toMatchObject({ status: 400, body: { error: { code: 'validation_failed' } } })
    }
    expect((await f.json('POST', '/v1/endpoints', { body: {} })).status).toBe(400)
    expect((await f.json('PATCH', `/v1/endpoints/${r.body.id}`, { body: { mode: 'push' } })).status).toBe(400)
    expect((await f.json('POST', `/v1/endpoints/${r.body.id}/secret/rotate`, { body: {} })).status).toBe(409)
  })

  it('claims oldest first with an event, spends an attempt, and acks', async () => {
    const ep = await pullEndpoint()
    const e1 = await send('order.created')
    clock.advance(1)
    const e2 = await send('order.paid')
    const got = await items(ep, { max: 10 })
    expect(got.map((i) => i.event.id)).toEqual([e1, e2])
    expect(got[0]).toMatchObject({ attempt: 1, ordering_key: null, event: { type: 'order.created', data: { n: 1 } } })
    expect(await items(ep)).toEqual([])
    const acked = await settle(ep, 'ack', { items: got.map((i) => ({ delivery_id: i.delivery_id, claim_token: i.claim_token })) })
    expect(acked).toEqual({ status: 200, body: { results: got.map((i) => ({ delivery_id: i.delivery_id, result: 'acked' })) } })
    expect(await delivery(got[0]!.delivery_id)).toMatchObject({ status: 'success', attempt_count: 1 })
    expect(await outcomes(got[0]!.delivery_id)).toEqual(['acked'])
    // A second ack with the same token changes nothing.
    const again = await settle(ep, 'ack', { items: [{ delivery_id: got[0]!.delivery_id, claim_token: got[0]!.claim_token }] })
    expect(again.body.results).toEqual([{ delivery_id: got[0]!.delivery_id, result: 'missed' }])
  })

  it('nack retry, dead and snooze, and release, with their attempt accounting', async () => {
    const ep = await pullEndpoint()
    for (let i = 0; i < 4; i++) await send()
    const [a, b, c, d] = await items(ep)
    const tok = (x: typeof a) => ({ delivery_id: x!.delivery_id, claim_token: x!.claim_token })
    const nacked = await settle(ep, 'nack', {
      items: [
        { ...tok(a), outcome: 'retry', delay: '10s', error: 'db down' },
        { ...tok(b), outcome: 'dead', error: 'bad payload' },
        { ...tok(c), outcome: 'snooze', delay: '2m' },
      ],
    })
    expect(nacked.body.results.map((r: { result: string }) => r.result)).toEqual(['retry_scheduled', 'dead', 'snoozed'])
    expect(await delivery(a!.delivery_id)).toMatchObject({ status: 'pending', attempt_count: 1 })
    expect(await delivery(b!.delivery_id)).toMatchObject({ status: 'dead', attempt_count: 1 })
    expect(await delivery(c!.delivery_id)).toMatchObject({ status: 'pending', attempt_count: 0 })
    const released = await settle(ep, 'release', { items: [tok(d)] })
    expect(released.body.results).toEqual([{ delivery_id: d!.delivery_id, result: 'released' }])
    expect(await delivery(d!.delivery_id)).toMatchObject({ status: 'pending', attempt_count: 0 })
    expect(await outcomes(a!.delivery_id)).toEqual(['retry'])
    expect((await delivery(a!.delivery_id)).attempts[0].error).toBe('db down')
    expect(await outcomes(b!.delivery_id)).toEqual(['dead'])
    expect(await outcomes(c!.delivery_id)).toEqual(['snoozed'])
    expect(await outcomes(d!.delivery_id)).toEqual(['released'])
    // Only the released one is due now; the retry after 10 s, the snooze after 2 min.
    const [d2] = await items(ep)
    expect(d2!.delivery_id).toBe(d!.delivery_id)
    clock.advance(10_000)
    const [a2] = await items(ep)
    expect(a2!.delivery_id).toBe(a!.delivery_id)
    await settle(ep, 'ack', { items: [tok(d2), tok(a2)] })
    clock.advance(120_000)
    const snoozed = await items(ep)
    expect(snoozed.map((i) => [i.delivery_id, i.attempt])).toEqual([[c!.delivery_id, 1]])
  })

  it('a retry on the last attempt is dead; lease expiry makes a delivery claimable again, then dead with lease_expired', async () => {
    const ep = await pullEndpoint({ retry_schedule: ['1s'] })
    await send()
    const [first] = await items(ep, { visibility: '5s' })
    clock.advance(5_000)
    const [second] = await items(ep, { visibility: '5s' })
    expect(second).toMatchObject({ delivery_id: first!.delivery_id, attempt: 2 })
    expect(second!.claim_token).not.toBe(first!.claim_token)
    const stale = await settle(ep, 'ack', { items: [{ delivery_id: first!.delivery_id, claim_token: first!.claim_token }] })
    expect(stale.body.results[0].result).toBe('missed')
    clock.advance(5_000)
    expect(await items(ep)).toEqual([])
    expect(await delivery(first!.delivery_id)).toMatchObject({ status: 'dead', attempt_count: 2, last_error: 'lease_expired' })
    expect(await outcomes(first!.delivery_id)).toEqual(['expired', 'expired'])

    await send()
    const [x] = await items(ep, { visibility: '5s' })
    clock.advance(10_000)
    const [y] = await items(ep)
    const r = await settle(ep, 'nack', { items: [{ delivery_id: y!.delivery_id, claim_token: y!.claim_token }] })
    expect(x!.delivery_id).toBe(y!.delivery_id)
    expect(r.body.results[0].result).toBe('dead')
  })

  it('honours the ordering barrier under nack and release', async () => {
    const ep = await pullEndpoint({ ordered: true })
    await send('order.created', { ordering_key: 'o1' })
    clock.advance(1)
    await send('order.paid', { ordering_key: 'o1' })
    const [first, ...rest] = await items(ep)
    expect(rest).toEqual([])
    expect(first!.event.type).toBe('order.created')
    await settle(ep, 'nack', { items: [{ delivery_id: first!.delivery_id, claim_token: first!.claim_token, delay: '1s' }] })
    expect(await items(ep)).toEqual([])
    clock.advance(1_000)
    const [again] = await items(ep)
    expect(again!.delivery_id).toBe(first!.delivery_id)
    await settle(ep, 'release', { items: [{ delivery_id: again!.delivery_id, claim_token: again!.claim_token }] })
    const [third] = await items(ep)
    expect(third!.delivery_id).toBe(first!.delivery_id)
    await settle(ep, 'ack', { items: [{ delivery_id: third!.delivery_id, claim_token: third!.claim_token }] })
    const [next] = await items(ep)
    expect(next!.event.type).toBe('order.paid')
  })

  it('two consumers never hold the same delivery; max_concurrency bounds the claimed and unsettled', async () => {
    const ep = await pullEndpoint({ max_concurrency: 3 })
    for (let i = 0; i < 5; i++) await send()
    const [one, two] = await Promise.all([items(ep, { max: 2 }), items(ep, { max: 2 })])
    const ids = [...one!, ...two!].map((i) => i.delivery_id)
    expect(ids.length).toBe(3)
    expect(new Set(ids).size).toBe(3)
    const held = [...one!, ...two!]
    await settle(ep, 'ack', { items: held.map((i) => ({ delivery_id: i.delivery_id, claim_token: i.claim_token })) })
    expect((await items(ep)).length).toBe(2)
  })

  it('rate_limit bounds the claims per second across consumers', async () => {
    const ep = await pullEndpoint({ rate_limit: 2 })
    for (let i = 0; i < 5; i++) await send()
    expect((await items(ep, { max: 10 })).length).toBe(2)
    expect((await items(ep, { max: 10 })).length).toBe(0)
    clock.advance(500)
    expect((await items(ep, { max: 10 })).length).toBe(1)
    clock.advance(1_000)
    expect((await items(ep, { max: 10 })).length).toBe(2)
  })

  it('narrows by event_types, and validates with stable codes', async () => {
    const ep = await pullEndpoint()
    await send('order.created')
    await send('user.created')
    expect((await items(ep, { event_types: ['user.created'] })).map((i) => i.event.type)).toEqual(['user.created'])
    for (const body of [{ event_types: [] }, { max: 0 }, { max: 101 }, { visibility: '500ms' }, { visibility: '13h' }, { wait: '21s' }, { wait: 5 }]) {
      expect(await claim(ep, body)).toMatchObject({ status: 400, body: { error: { code: 'validation_failed' } } })
    }
    const tok = { delivery_id: 'dlv_x', claim_token: 't' }
    for (const [action, body] of [
      ['ack', { items: [] }],
      ['nack', { items: [{ ...tok, outcome: 'snooze', delay: '2h' }] }],
      ['nack', { items: [{ ...tok, delay: '25h' }] }],
      ['nack', { items: [{ ...tok, error: 'x'.repeat(2001) }] }],
      ['release', { items: [tok], delay: '2h' }],
    ] as const) {
      expect(await settle(ep, action, body)).toMatchObject({ status: 400, body: { error: { code: 'validation_failed' } } })
    }
    const unknown = await settle(ep, 'ack', { items: [tok] })
    expect(unknown.body.results).toEqual([{ delivery_id: 'dlv_x', result: 'missed' }])
  })

  it('claiming on a push endpoint is 409 conflict; an unknown endpoint 404', async () => {
    const push = await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/h' } })
    expect(await claim(push.body.id)).toMatchObject({ status: 409, body: { error: { code: 'conflict' } } })
    expect((await claim('ep_01jd0000000000000000000000')).status).toBe(404)
  })

  it('a long poll is answered by the commit that makes a delivery due', async () => {
    const ep = await pullEndpoint()
    const waiting = claim(ep, { wait: '20s' })
    await send()
    const r = await waiting
    expect(r.status).toBe(200)
    expect(r.body.items.length).toBe(1)
  })

  it('on PostgreSQL, a long poll is answered by a commit on another node', async (ctx) => {
    const url = f.pb.config.databaseUrl
    if (f.pb.store.backend !== 'postgres' || !url) return ctx.skip()
    const ep = await pullEndpoint()
    const { dir, cleanup } = tempDir('postbox-node2-')
    const other = await Postbox.open({ dataDir: dir, databaseUrl: url, adminKey: ADMIN_KEY, bootstrapAdminKey: false, clock })
    try {
      const waiting = claim(ep, { wait: '20s' })
      await other.events.send({ type: 'order.created', data: {} })
      const r = await waiting
      expect(r.body.items.length).toBe(1)
    } finally {
      await other.close()
      cleanup()
    }
  })

  it('the dispatcher never claims a pull endpoint delivery', async () => {
    const ep = await pullEndpoint()
    await send()
    const claimed = await f.pb.store.deliveries.claimDue({ limit: 100, now: clock.now() + 60_000, defaultTimeoutMs: 1000 })
    expect(claimed).toEqual([])
    const [held] = await items(ep, { visibility: '5s' })
    // The dispatcher's lease sweep ends a lapsed pull claim too, and logs it as expired.
    await f.pb.store.deliveries.claimDue({ limit: 100, now: clock.now() + 5_000, defaultTimeoutMs: 1000 })
    expect(await delivery(held!.delivery_id)).toMatchObject({ status: 'pending', attempt_count: 1 })
    expect(await outcomes(held!.delivery_id)).toEqual(['expired'])
  })

  it('the consumer role: pull routes and endpoint reads only, of its own application when scoped', async () => {
    const ep = await pullEndpoint()
    await f.json('POST', '/v1/apps', { body: { id: 'other', name: 'Other' } })
    const otherEp = (await f.json('POST', '/v1/endpoints', { body: { mode: 'pull', app_id: 'other' } })).body.id as string
    const consumer = (await f.json('POST', '/v1/keys', { body: { role: 'consumer' } })).body.key as string
    const scoped = (await f.json('POST', '/v1/keys', { body: { role: 'consumer', app_id: 'default' } })).body.key as string
    await send()
    for (const key of [consumer, scoped]) {
      expect((await f.json('GET', '/v1/endpoints', { key })).status).toBe(200)
      expect((await f.json('GET', `/v1/endpoints/${ep}`, { key })).status).toBe(200)
      expect((await f.json('POST', '/v1/events', { key, body: { type: 'a.b', data: {} } })).status).toBe(403)
      expect((await f.json('POST', '/v1/endpoints', { key, body: { mode: 'pull' } })).status).toBe(403)
      expect((await f.json('GET', '/v1/deliveries', { key })).status).toBe(403)
      expect((await f.json('GET', '/v1/keys', { key })).status).toBe(403)
    }
    expect((await claim(ep, {}, scoped)).body.items.length).toBe(1)
    expect((await claim(otherEp, {}, scoped)).status).toBe(404)
    expect((await claim(otherEp, {}, consumer)).status).toBe(200)
    expect((await claim(ep, {}, f.keys.viewer)).status).toBe(403)
    expect((await claim(ep, {}, f.keys.publisher)).status).toBe(403)
  })
})
