import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { consume, createPostboxClient } from '../sdk/client/index.js'
import { startConsumer, type PulledDelivery } from '../sdk/client/consume-loop.js'
import { apiFixture, type ApiFixture } from './support/api.js'

// The consumer loops of pull endpoints (docs/pull-endpoints.md): `pb.consume` in-process and the
// typed client's `consume` over HTTP, on the backend under test. Proven by the deliveries' state.
describe('consume()', () => {
  let f: ApiFixture
  let ep: string
  beforeEach(async () => {
    f = await apiFixture()
    ep = (await f.json('POST', '/v1/endpoints', { body: { mode: 'pull' } })).body.id as string
  })
  afterEach(async () => f.close())

  const send = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) expect((await f.json('POST', '/v1/events', { body: { type: 'job.run', data: { i } } })).status).toBe(202)
  }
  const deliveries = async () => ((await f.json('GET', `/v1/deliveries?endpoint_id=${ep}`)).body.data as { id: string; status: string; attempt_count: number }[])
  /** A promise resolved by the `n`th call of `hit`. */
  const after = (n: number) => {
    let hit = (): void => {}
    const reached = new Promise<void>((resolve) => {
      let seen = 0
      hit = () => {
        if (++seen === n) resolve()
      }
    })
    return { reached, hit: () => hit() }
  }

  it('pb.consume acks what the handler resolves', async () => {
    await send(3)
    const seen: number[] = []
    const done = after(3)
    const c = f.pb.consume(ep, (event) => {
      seen.push((event.data as { i: number }).i)
      done.hit()
    }, { concurrency: 2 })
    await done.reached
    await c.stop()
    expect(seen.sort()).toEqual([0, 1, 2])
    expect((await deliveries()).map((d) => d.status)).toEqual(['success', 'success', 'success'])
  })

  it('pb.consume nacks what the handler throws, with retry and the message', async () => {
    await send(1)
    const done = after(1)
    const c = f.pb.consume(ep, () => {
      done.hit()
      throw new Error('downstream refused')
    })
    await done.reached
    await c.stop()
    const [d] = await deliveries()
    expect(d).toMatchObject({ status: 'pending', attempt_count: 1 })
    const got = (await f.json('GET', `/v1/deliveries/${d!.id}`)).body
    expect(got.attempts.map((a: { outcome: string; error: string }) => [a.outcome, a.error])).toEqual([['retry', 'downstream refused']])
  })

  it('a long poll of pb.consume is woken by the commit that makes a delivery due', async () => {
    const done = after(1)
    const c = f.pb.consume(ep, () => done.hit())
    await send(1)
    await done.reached
    await c.stop()
    expect((await deliveries()).map((d) => d.status)).toEqual(['success'])
  })

  it('stop releases what was claimed and not started, with the attempt refunded', async () => {
    await send(2)
    const pull = f.pb.webhooks.pull
    let handled = 0
    let stopping: Promise<void> | null = null
    const c = startConsumer(
      {
        // The claim comes back after stop() was called: its deliveries are never started.
        claim: async (body, signal) => {
          const items: PulledDelivery[] = (await pull.claim(ep, body, null, signal)).items
          stopping = c.stop()
          return items
        },
        ack: (items) => pull.ack(ep, { items }),
        nack: (items) => pull.nack(ep, { items }),
        release: (items) => pull.release(ep, { items }),
      },
      () => {
        handled++
      },
      { concurrency: 5 },
    )
    await c.done
    await (stopping as Promise<void> | null)
    expect(handled).toBe(0)
    const ds = await deliveries()
    expect(ds.map((d) => [d.status, d.attempt_count])).toEqual([['pending', 0], ['pending', 0]])
    const got = (await f.json('GET', `/v1/deliveries/${ds[0]!.id}`)).body
    expect(got.attempts.map((a: { outcome: string }) => a.outcome)).toEqual(['released'])
  })

  it("the typed client's consume acks over HTTP with a consumer key", async () => {
    const key = (await f.json('POST', '/v1/keys', { body: { role: 'consumer' } })).body.key as string
    const client = createPostboxClient({ baseUrl: 'http://postbox.test', token: key, fetch: async (req: Request) => f.pb.app.fetch(req) })
    await send(2)
    const done = after(2)
    const c = consume(client, ep, () => done.hit(), { concurrency: 2 })
    await done.reached
    await c.stop()
    expect((await deliveries()).map((d) => d.status)).toEqual(['success', 'success'])
  })
})
