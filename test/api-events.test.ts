import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createGroupCommit } from '../src/api/group-commit.js'
import { apiFixture, type ApiFixture } from './support/api.js'

describe('POST /v1/events', () => {
  let f: ApiFixture
  beforeEach(async () => {
    f = await apiFixture()
  })
  afterEach(async () => f.close())

  it('accepts with 202 and counts the deliveries it created', async () => {
    await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/a', event_types: ['invoice.*'] } })
    await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/b' } })
    const res = await f.json('POST', '/v1/events', { key: f.keys.publisher, body: { type: 'invoice.paid', data: { n: 1 } } })
    expect(res.status).toBe(202)
    expect(res.body).toMatchObject({ type: 'invoice.paid', deliveries: 2, deduplicated: false })
    expect(res.body.id).toMatch(/^evt_/)
    const other = await f.json('POST', '/v1/events', { body: { type: 'user.created', data: {} } })
    expect(other.body.deliveries).toBe(1)
    const got = await f.json('GET', `/v1/events/${res.body.id}`, { key: f.keys.viewer })
    expect(got.status).toBe(200)
    expect(got.body).toMatchObject({ id: res.body.id, type: 'invoice.paid', data: { n: 1 } })
    expect(got.body.deliveries).toHaveLength(2)
  })

  it('is idempotent on the body id: 202 first, 200 with deduplicated: true after, same event', async () => {
    await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/a' } })
    const first = await f.json('POST', '/v1/events', { body: { id: 'order-42', type: 'order.created', data: { v: 1 } } })
    const again = await f.json('POST', '/v1/events', { body: { id: 'order-42', type: 'order.created', data: { v: 2 } } })
    expect(first.status).toBe(202)
    expect(again.status).toBe(200)
    expect(again.body).toMatchObject({ id: first.body.id, deduplicated: true })
    expect((await f.json('GET', '/v1/deliveries')).body.data).toHaveLength(1)
  })

  it('is idempotent on the Idempotency-Key header', async () => {
    const headers = { 'idempotency-key': 'req-7' }
    const first = await f.json('POST', '/v1/events', { headers, body: { type: 'a.b', data: {} } })
    const again = await f.json('POST', '/v1/events', { headers, body: { type: 'a.b', data: {} } })
    expect([first.status, again.status]).toEqual([202, 200])
    expect(again.body.id).toBe(first.body.id)
    // the header and a body id name the same client id
    const viaBody = await f.json('POST', '/v1/events', { body: { id: 'req-7', type: 'a.b', data: {} } })
    expect(viaBody).toMatchObject({ status: 200, body: { id: first.body.id, deduplicated: true } })
  })

  it('rejects a body id that contradicts the Idempotency-Key header', async () => {
    const res = await f.json('POST', '/v1/events', { headers: { 'idempotency-key': 'k1' }, body: { id: 'k2', type: 'a', data: {} } })
    expect(res).toMatchObject({ status: 400, body: { error: { code: 'validation_failed', details: [{ field: 'id' }] } } })
  })

  it('group commit: concurrent calls share transactions and each is answered after commit', async () => {
    await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/a' } })
    const spy = vi.spyOn(f.pb.webhooks.events, 'sendPrepared')
    const n = 200
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) => f.json('POST', '/v1/events', { key: f.keys.publisher, body: { type: 'load.test', data: { i } } })),
    )
    expect(results.every((r) => r.status === 202)).toBe(true)
    const ids = new Set(results.map((r) => r.body.id))
    expect(ids.size).toBe(n)
    // every answered id is committed and visible
    for (const id of ids) expect(await f.pb.store.events.get(id as string)).not.toBeNull()
    const counts = await f.pb.store.deliveries.countByStatus()
    expect(counts.pending + counts.in_flight + counts.success + counts.dead).toBe(n)
    // far fewer transactions than requests
    expect(spy.mock.calls.length).toBeGreaterThan(0)
    expect(spy.mock.calls.length).toBeLessThan(n / 4)
    expect(spy.mock.calls.reduce((s, c) => s + c[0].length, 0)).toBe(n)
  })

  it('group commit: duplicates inside one group resolve to one event', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, () => f.json('POST', '/v1/events', { body: { id: 'same', type: 'x', data: {} } })),
    )
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1)
    expect(results.filter((r) => r.status === 202)).toHaveLength(1)
    expect(results.filter((r) => r.status === 200 && r.body.deduplicated)).toHaveLength(19)
  })
})

describe('POST /v1/events/batch', () => {
  let f: ApiFixture
  beforeEach(async () => {
    f = await apiFixture()
  })
  afterEach(async () => f.close())

  it('stores up to 1,000 events in one transaction with results in input order', async () => {
    await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/a' } })
    const events = Array.from({ length: 1000 }, (_, i) => ({ type: 'bulk.item', data: { i }, id: `b-${i}` }))
    const res = await f.json('POST', '/v1/events/batch', { key: f.keys.publisher, body: { events } })
    expect(res.status).toBe(202)
    expect(res.body.results).toHaveLength(1000)
    expect(res.body.results.every((r: { deliveries: number; deduplicated: boolean }) => r.deliveries === 1 && !r.deduplicated)).toBe(true)
    const again = await f.json('POST', '/v1/events/batch', { body: { events: events.slice(0, 3) } })
    expect(again.status).toBe(200)
    expect(again.body.results.map((r: { id: string }) => r.id)).toEqual(res.body.results.slice(0, 3).map((r: { id: string }) => r.id))
  })

  it('is all or nothing: one invalid event rejects the whole batch', async () => {
    const res = await f.json('POST', '/v1/events/batch', { body: { events: [{ type: 'ok', data: {} }, { type: 'ok', data: 'no' }] } })
    expect(res.status).toBe(400)
    expect((await f.pb.store.events.list({ limit: 5 })).data).toHaveLength(0)
  })
})

describe('createGroupCommit', () => {
  it('isolates a failing input: the others still commit, the bad one gets its own error', async () => {
    const committed: number[] = []
    const gc = createGroupCommit<number, number>({
      runMany: async (xs) => {
        if (xs.includes(3)) throw new Error('bad input 3')
        committed.push(...xs)
        return xs.map((x) => x * 10)
      },
      runOne: async (x) => {
        if (x === 3) throw new Error('bad input 3')
        committed.push(x)
        return x * 10
      },
    })
    const settled = await Promise.allSettled([1, 2, 3, 4].map((x) => gc.submit(x)))
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : 'err'))).toEqual([10, 20, 'err', 40])
    expect(committed.sort()).toEqual([1, 2, 4])
  })

  it('fails the whole group on a storage error without retrying one by one', async () => {
    const runOne = vi.fn(async (x: number) => x)
    const gc = createGroupCommit<number, number>({
      runMany: async () => {
        throw Object.assign(new Error('disk full'), { code: 'SQLITE_FULL' })
      },
      runOne,
    })
    const settled = await Promise.allSettled([1, 2].map((x) => gc.submit(x)))
    expect(settled.every((s) => s.status === 'rejected')).toBe(true)
    expect(runOne).not.toHaveBeenCalled()
  })

  it('splits queues larger than maxBatch', async () => {
    const sizes: number[] = []
    const gc = createGroupCommit<number, number>({
      runMany: async (xs) => (sizes.push(xs.length), xs),
      runOne: async (x) => x,
      maxBatch: 4,
    })
    await Promise.all(Array.from({ length: 10 }, (_, i) => gc.submit(i)))
    expect(sizes).toEqual([4, 4, 2])
  })

  it('takes what arrives while a flush is open into the next round, one batch', async () => {
    const batches: number[][] = []
    let release!: () => void
    const held = new Promise<void>((r) => (release = r))
    const gc = createGroupCommit<number, number>({
      runMany: async (xs) => {
        batches.push(xs)
        if (batches.length === 1) await held
        return xs
      },
      runOne: async (x) => x,
    })
    const first = gc.submit(0)
    await new Promise((r) => setImmediate(r))
    const later = [1, 2, 3].map((x) => gc.submit(x))
    await new Promise((r) => setImmediate(r))
    expect(batches).toEqual([[0]])
    expect(gc.queued).toBe(3)
    release()
    expect(await Promise.all([first, ...later])).toEqual([0, 1, 2, 3])
    expect(batches).toEqual([[0], [1, 2, 3]])
  })
})
