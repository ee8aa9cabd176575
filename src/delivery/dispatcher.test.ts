import { afterEach, describe, expect, it } from 'vitest'
import { testConfig } from '../config.js'
import { ManualClock, systemClock } from '../lib/clock.js'
import { silentLogger } from '../log.js'
import type { Store } from '../store/index.js'
import { PASS_ENDPOINTS, type ClaimedDelivery } from '../store/deliveries.js'
import { tempStore } from '../../test/helpers.js'
import { insertEndpoint } from '../../test/queue-helpers.js'
import type { ChannelResult, ChannelSender } from './channel.js'
import { createDispatcher, type Dispatcher } from './dispatcher.js'
import { createStoreLease } from './lease.js'

let cleanup: (() => Promise<void>) | undefined
let dispatcher: Dispatcher | undefined
afterEach(async () => {
  await dispatcher?.stop(50)
  dispatcher = undefined
  await cleanup?.()
  cleanup = undefined
})

function setup(sender: ChannelSender, concurrency = 8, pollIntervalMs = 20): { store: Store; d: Dispatcher } {
  const t = tempStore()
  cleanup = t.cleanup
  const d = createDispatcher({
    store: t.store, config: testConfig({ concurrency, pollIntervalMs }), clock: systemClock, rng: () => 0.5,
    log: silentLogger(), channels: new Map([['inbox', sender], ['webhook', sender]]),
  })
  dispatcher = d
  return { store: t.store, d }
}

const enqueue = (store: Store, n: number, now = Date.now()): Promise<void> =>
  store.tx(async (s) => {
    for (let i = 0; i < n; i++) {
      await s.deliveries.enqueue({ channel: 'inbox', notificationId: `ntf_${i}`, recipient: 'u', eventType: 't', maxAttempts: 3, nextAttemptAt: now }, now)
    }
  })

const waitFor = async (cond: () => boolean | Promise<boolean>): Promise<void> => {
  for (let i = 0; i < 1000; i++) {
    if (await cond()) return
    await new Promise((r) => setTimeout(r, 5))
  }
  throw new Error('timed out')
}

const counts = (store: Store) => store.deliveries.countByStatus()

describe('dispatcher', () => {
  it('claims again soon after a claim cut short by many endpoints with pending rows, not at the next poll', async () => {
    const sent: string[] = []
    const sender: ChannelSender = {
      send: (row, signal) =>
        row.endpointId === 'ep_busy'
          ? new Promise<ChannelResult>((resolve) => signal.addEventListener('abort', () => resolve({ outcome: { kind: 'release' } })))
          : (sent.push(row.endpointId!), Promise.resolve({ outcome: { kind: 'success' } })),
    }
    const { store, d } = setup(sender, 64, 60_000)
    const sync = store.sqlite!
    const add = (endpointId: string, recipient: string, nextAttemptAt: number): void => {
      sync.deliveries.enqueue({ channel: 'webhook', endpointId, notificationId: 'ntf_x', recipient, eventType: 't', maxAttempts: 3, nextAttemptAt }, Date.now())
    }
    // One endpoint at its limit heads the queue; 4 × PASS_ENDPOINTS others hold scheduled rows.
    insertEndpoint(sync.db, { id: 'ep_busy' })
    sync.db.prepare(`UPDATE endpoints SET max_concurrency = 1 WHERE id = 'ep_busy'`).run()
    const endpoints = Array.from({ length: 4 * PASS_ENDPOINTS }, (_, i) => `ep_${String(i).padStart(4, '0')}`)
    sync.tx(() => {
      for (let i = 0; i < 3; i++) add('ep_busy', `busy${i}`, Date.now() - 1000)
      for (const id of endpoints) {
        insertEndpoint(sync.db, { id })
        add(id, `later_${id}`, Date.now() + 3_600_000)
      }
    })
    d.start()
    await waitFor(() => d.inFlight() === 1)
    // Due on the endpoint that sorts last: the claim its commit wakes stops looking before it.
    sync.tx(() => add(endpoints.at(-1)!, 'due', Date.now()))
    await waitFor(() => sent.length === 1)
    expect(sent).toEqual([endpoints.at(-1)])
  })

  it('keeps the last eighth of the global cap from rows without an endpoint that already hold 4 slots', async () => {
    // A mail server that never answers: every claimed row waits until shutdown.
    const hang: ChannelSender = {
      send: (_row, signal) => new Promise<ChannelResult>((resolve) => signal.addEventListener('abort', () => resolve({ outcome: { kind: 'release' } }))),
    }
    const { store, d } = setup(hang, 16)
    await enqueue(store, 40)
    d.start()
    await waitFor(() => d.inFlight() >= 14)
    await new Promise((r) => setTimeout(r, 60))
    // 16 - 2 reserved: the reserve is for endpoints (or rows without one) with fewer than 4 in flight.
    expect(d.inFlight()).toBe(14)
  })

  it('wakes on commit and settles every outcome', async () => {
    const seen: string[] = []
    const { store, d } = setup({ send: async (row: ClaimedDelivery) => (seen.push(row.id), { outcome: { kind: 'success' } }) })
    d.start()
    await enqueue(store, 20)
    await waitFor(async () => (await counts(store)).success === 20)
    expect(new Set(seen).size).toBe(20)
    expect(d.inFlight()).toBe(0)
  })

  it("tells the claim a commit woke that rows were made due (dueHint), and not the other claims", async () => {
    const { store, d } = setup({ send: async () => ({ outcome: { kind: 'success' } }) }, 8, 60_000)
    const deliveries = store.deliveries as { claimDue: Store['deliveries']['claimDue'] }
    const claimDue = deliveries.claimDue
    const claims: { hint: boolean | undefined; rows: number }[] = []
    let active = 0
    deliveries.claimDue = async (opts) => {
      active++
      try {
        const rows = await claimDue(opts)
        claims.push({ hint: opts.dueHint, rows: rows.length })
        return rows
      } finally {
        active--
      }
    }
    d.start()
    // The start's own claim: no hint. Then nothing runs until a commit wakes it (the poll is 60 s).
    await waitFor(() => claims.length >= 1 && active === 0)
    await new Promise((r) => setTimeout(r, 100))
    expect(claims.map((c) => c.hint)).toEqual(claims.map(() => undefined))
    claims.length = 0
    await enqueue(store, 1)
    await waitFor(async () => (await counts(store)).success === 1)
    expect(claims[0]).toEqual({ hint: true, rows: 1 })
    // A hint is used once: a claim after it goes without one unless another commit wakes it.
    d.wake()
    await waitFor(() => claims.length >= 2 && active === 0)
    expect(claims.slice(1).map((c) => c.hint)).toEqual(claims.slice(1).map(() => undefined))
  })

  it('wakes for a retry due before the next poll tick', async () => {
    let calls = 0
    const sender: ChannelSender = {
      send: async () => (++calls === 1 ? { outcome: { kind: 'retry', at: Date.now() + 30 } } : { outcome: { kind: 'success' } }),
    }
    const { store, d } = setup(sender, 8, 60_000)
    d.start()
    await enqueue(store, 1)
    const t0 = Date.now()
    await waitFor(async () => (await counts(store)).success === 1)
    expect(calls).toBe(2)
    expect(Date.now() - t0).toBeLessThan(5000)
  })

  it('stop() aborts in-flight sends at the deadline; a sender that had not sent releases (attempt refunded)', async () => {
    const started: ClaimedDelivery[] = []
    const sender: ChannelSender = {
      send: (row, signal) =>
        new Promise<ChannelResult>((resolve) => {
          started.push(row)
          signal.addEventListener('abort', () => resolve({ outcome: { kind: 'release' } }))
        }),
    }
    const { store, d } = setup(sender, 3)
    d.start()
    await enqueue(store, 5)
    await waitFor(() => started.length === 3)
    expect(await counts(store)).toMatchObject({ in_flight: 3, pending: 2 })
    await d.stop(20)
    expect(await counts(store)).toMatchObject({ in_flight: 0, pending: 5 })
    expect((await store.deliveries.list({ limit: 10 })).data.every((r) => r.attempts === 0)).toBe(true)
  })

  it('a claim statement that fails mid-round strands nothing: rows claimed before it are sent', async () => {
    const sent = new Set<string>()
    const { store, d } = setup({ send: async (row: ClaimedDelivery) => (sent.add(row.id), { outcome: { kind: 'success' } }) }, 256)
    await enqueue(store, 200)
    // The second statement of the first round (rows 129–200) fails, as SQLITE_BUSY would.
    const deliveries = store.deliveries as { claimDue: Store['deliveries']['claimDue'] }
    const claimDue = deliveries.claimDue
    let calls = 0
    deliveries.claimDue = (opts) => (++calls === 2 ? Promise.reject(new Error('database is locked')) : claimDue(opts))
    d.start()
    await waitFor(async () => (await counts(store)).success === 200)
    expect(sent.size).toBe(200)
    await waitFor(() => d.inFlight() === 0)
    expect(await counts(store)).toMatchObject({ pending: 0, in_flight: 0, success: 200 })
  })

  it('a channel that takes few rows at a time (a hanging mail server) holds back only its own rows', async () => {
    const t = tempStore()
    cleanup = t.cleanup
    const delivered: string[] = []
    const hanging: ChannelSender = {
      maxInFlight: 2,
      send: (_row, signal) => new Promise<ChannelResult>((resolve) => signal.addEventListener('abort', () => resolve({ outcome: { kind: 'release' } }))),
    }
    const inbox: ChannelSender = { send: async (row) => (delivered.push(row.id), { outcome: { kind: 'success' } }) }
    const d = createDispatcher({
      store: t.store, config: testConfig({ concurrency: 16, pollIntervalMs: 60_000 }), clock: systemClock, rng: () => 0.5,
      log: silentLogger(), channels: new Map([['email', hanging], ['inbox', inbox]]),
    })
    dispatcher = d
    const add = async (s: Store, channel: 'email' | 'inbox', i: number): Promise<string> =>
      (await s.deliveries.enqueue({ channel, notificationId: `ntf_${channel}${i}`, recipient: 'u', eventType: 't', maxAttempts: 3, nextAttemptAt: Date.now() - 1000 }, Date.now())).id
    await t.store.tx(async (s) => {
      for (let i = 0; i < 40; i++) await add(s, 'email', i)
    })
    d.start()
    await waitFor(() => d.inFlight() === 2)
    // Behind 38 pending email rows, with 14 slots free: the inbox row goes at once.
    const row = await t.store.tx((s) => add(s, 'inbox', 0))
    // Sent, then settled: the sender reports before the settle commits.
    await waitFor(async () => (await counts(t.store)).success === 1)
    expect(delivered).toEqual([row])
    expect(await counts(t.store)).toMatchObject({ in_flight: 2, pending: 38, success: 1 })
  })

  it('offers the rows a previous holder left in flight again only after their claim leases', async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1))
    const t = tempStore()
    cleanup = t.cleanup
    const sent: string[] = []
    await enqueue(t.store, 2, clock.now())
    // Claimed by a process that died (60 s timeout + the 30 s margin: a lease of 90 s).
    const [left] = await t.store.deliveries.claimDue({ limit: 1, now: clock.now(), defaultTimeoutMs: 60_000, owner: 'dead.' })
    const d = createDispatcher({
      store: t.store, config: testConfig({ concurrency: 8, pollIntervalMs: 20 }), clock, rng: () => 0.5, log: silentLogger(),
      channels: new Map([['inbox', { send: async (row: ClaimedDelivery) => (sent.push(row.id), { outcome: { kind: 'success' } }) }]]),
    })
    dispatcher = d
    d.start()
    await waitFor(() => sent.length === 1)
    await new Promise((r) => setTimeout(r, 60))
    expect(sent).not.toContain(left!.id)
    expect((await t.store.deliveries.get(left!.id))!.status).toBe('in_flight')
    clock.advance(89_999)
    await new Promise((r) => setTimeout(r, 60))
    expect(sent).toHaveLength(1)
    clock.advance(1)
    await waitFor(() => sent.length === 2)
    expect(sent[1]).toBe(left!.id)
    await waitFor(async () => (await t.store.deliveries.get(left!.id))!.status === 'success')
    // The attempt the dead process spent stays spent.
    expect((await t.store.deliveries.get(left!.id))!.attempts).toBe(2)
  })

  it('sees an endpoint setting changed meanwhile at the next claim (the cache refreshes before it)', async () => {
    const hang: ChannelSender = {
      send: (_row, signal) => new Promise<ChannelResult>((resolve) => signal.addEventListener('abort', () => resolve({ outcome: { kind: 'release' } }))),
    }
    const { store, d } = setup(hang, 16)
    const sync = store.sqlite!
    insertEndpoint(sync.db, { id: 'ep_1' })
    sync.db.prepare(`UPDATE endpoints SET max_concurrency = 1 WHERE id = 'ep_1'`).run()
    for (let i = 0; i < 4; i++) {
      await store.deliveries.enqueue({ channel: 'webhook', endpointId: 'ep_1', notificationId: 'ntf_x', recipient: `r${i}`, eventType: 't', maxAttempts: 3, nextAttemptAt: Date.now() }, Date.now())
    }
    d.start()
    await waitFor(() => d.inFlight() === 1)
    await new Promise((r) => setTimeout(r, 60))
    expect(d.inFlight()).toBe(1)
    sync.db.prepare(`UPDATE endpoints SET max_concurrency = 3 WHERE id = 'ep_1'`).run()
    await store.endpoints.invalidate()
    d.wake()
    await waitFor(() => d.inFlight() === 3)
  })

  it('stops claiming when another process took its lease (it could not renew in time)', async () => {
    const sent: string[] = []
    const t = tempStore()
    cleanup = t.cleanup
    const d = createDispatcher({
      store: t.store, config: testConfig({ concurrency: 8, pollIntervalMs: 20 }), clock: systemClock, rng: () => 0.5, log: silentLogger(),
      channels: new Map([['inbox', { send: async (row: ClaimedDelivery) => (sent.push(row.id), { outcome: { kind: 'success' } }) }]]),
      lease: createStoreLease(t.store, { owner: 'me', renewMs: 20 }),
    })
    dispatcher = d
    d.start()
    await enqueue(t.store, 1)
    await waitFor(() => sent.length === 1)
    // Another process judged the lease expired and took it.
    t.store.sqlite!.db.prepare(`UPDATE locks SET owner = 'other', seen_at = ? WHERE name = 'deliveries'`).run(Date.now() + 60_000)
    await new Promise((r) => setTimeout(r, 1200))
    await t.store.deliveries.enqueue({ channel: 'inbox', notificationId: 'ntf_late', recipient: 'u', eventType: 't', maxAttempts: 3, nextAttemptAt: Date.now() }, Date.now())
    await new Promise((r) => setTimeout(r, 100))
    expect(sent).toHaveLength(1)
    expect((await t.store.deliveries.countByStatus()).pending).toBe(1)
  })
})
