import { spawnSync } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import { testConfig } from '../config.js'
import { systemClock } from '../lib/clock.js'
import { silentLogger } from '../log.js'
import { openStore, type Store } from '../store/index.js'
import type { ClaimedDelivery } from '../store/deliveries.js'
import { tempStore } from '../../test/helpers.js'
import { insertEndpoint } from '../../test/queue-helpers.js'
import { PASS_ENDPOINTS } from '../store/delivery-claim.js'
import type { ChannelResult, ChannelSender } from './channel.js'
import { createDispatcher, type Dispatcher } from './dispatcher.js'
import { PID_NAMESPACE, processStart } from './claim-owner.js'

let cleanup: (() => void) | undefined
let dispatcher: Dispatcher | undefined
afterEach(async () => {
  await dispatcher?.stop(50)
  cleanup?.()
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

const enqueue = (store: Store, n: number): void =>
  store.tx(() => {
    for (let i = 0; i < n; i++) {
      store.deliveries.enqueue({ channel: 'inbox', notificationId: `ntf_${i}`, recipient: 'u', eventType: 't', maxAttempts: 3, nextAttemptAt: Date.now() }, Date.now())
    }
  })

const waitFor = async (cond: () => boolean): Promise<void> => {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setTimeout(r, 5))
  if (!cond()) throw new Error('timed out')
}

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
    const add = (endpointId: string, recipient: string, nextAttemptAt: number): void => {
      store.deliveries.enqueue({ channel: 'webhook', endpointId, notificationId: 'ntf_x', recipient, eventType: 't', maxAttempts: 3, nextAttemptAt }, Date.now())
    }
    // One endpoint at its limit heads the queue; 4 × PASS_ENDPOINTS others hold scheduled rows.
    insertEndpoint(store.db, { id: 'ep_busy' })
    store.db.prepare(`UPDATE endpoints SET max_concurrency = 1 WHERE id = 'ep_busy'`).run()
    const endpoints = Array.from({ length: 4 * PASS_ENDPOINTS }, (_, i) => `ep_${String(i).padStart(4, '0')}`)
    store.tx(() => {
      for (let i = 0; i < 3; i++) add('ep_busy', `busy${i}`, Date.now() - 1000)
      for (const id of endpoints) {
        insertEndpoint(store.db, { id })
        add(id, `later_${id}`, Date.now() + 3_600_000)
      }
    })
    d.start()
    await waitFor(() => d.inFlight() === 1)
    // Due on the endpoint that sorts last: the claim its commit wakes stops looking before it.
    add(endpoints.at(-1)!, 'due', Date.now())
    await waitFor(() => sent.length === 1)
    expect(sent).toEqual([endpoints.at(-1)])
  })

  it('keeps the last eighth of the global cap from rows without an endpoint that already hold 4 slots', async () => {
    // A mail server that never answers: every claimed row waits until shutdown.
    const hang: ChannelSender = {
      send: (_row, signal) => new Promise<ChannelResult>((resolve) => signal.addEventListener('abort', () => resolve({ outcome: { kind: 'release' } }))),
    }
    const { store, d } = setup(hang, 16)
    enqueue(store, 40)
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
    enqueue(store, 20)
    await waitFor(() => store.deliveries.countByStatus().success === 20)
    expect(new Set(seen).size).toBe(20)
    expect(d.inFlight()).toBe(0)
  })

  it('wakes for a retry due before the next poll tick', async () => {
    let calls = 0
    const sender: ChannelSender = {
      send: async () => (++calls === 1 ? { outcome: { kind: 'retry', at: Date.now() + 30 } } : { outcome: { kind: 'success' } }),
    }
    const { store, d } = setup(sender, 8, 60_000)
    d.start()
    enqueue(store, 1)
    const t0 = Date.now()
    await waitFor(() => store.deliveries.countByStatus().success === 1)
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
    enqueue(store, 5)
    await waitFor(() => started.length === 3)
    expect(store.deliveries.countByStatus()).toMatchObject({ in_flight: 3, pending: 2 })
    await d.stop(20)
    expect(store.deliveries.countByStatus()).toMatchObject({ in_flight: 0, pending: 5 })
    expect(store.deliveries.list({ limit: 10 }).data.every((r) => r.attempts === 0)).toBe(true)
  })

  it('a claim statement that fails mid-round strands nothing: rows claimed before it are sent', async () => {
    const sent = new Set<string>()
    const { store, d } = setup({ send: async (row: ClaimedDelivery) => (sent.add(row.id), { outcome: { kind: 'success' } }) }, 256)
    enqueue(store, 200)
    // The second statement of the first round (rows 129–200) fails, as SQLITE_BUSY would.
    const claimDue = store.deliveries.claimDue
    let calls = 0
    store.deliveries.claimDue = (opts) => {
      if (++calls === 2) throw new Error('database is locked')
      return claimDue(opts)
    }
    d.start()
    await waitFor(() => store.deliveries.countByStatus().success === 200)
    expect(sent.size).toBe(200)
    await waitFor(() => d.inFlight() === 0)
    expect(store.deliveries.countByStatus()).toMatchObject({ pending: 0, in_flight: 0, success: 200 })
  })

  it('a second dispatcher on the same file leaves the first one\'s in-flight rows alone', async () => {
    let release: (() => void) | null = null
    const sends: string[] = []
    const slow: ChannelSender = {
      send: async (row: ClaimedDelivery) => {
        sends.push(row.id)
        await new Promise<void>((r) => (release = r))
        return { outcome: { kind: 'success' } }
      },
    }
    const { store, d } = setup(slow)
    enqueue(store, 1)
    d.start()
    await waitFor(() => sends.length === 1)
    const other = openStore(store.path)
    const second = createDispatcher({
      store: other, config: testConfig({ concurrency: 8, pollIntervalMs: 20 }), clock: systemClock, rng: () => 0.5,
      log: silentLogger(), channels: new Map([['inbox', slow]]),
    })
    try {
      second.start()
      await new Promise((r) => setTimeout(r, 100))
      // Still in flight with the first; the second neither released nor re-sent it.
      expect(sends).toHaveLength(1)
      expect(store.deliveries.countByStatus().in_flight).toBe(1)
    } finally {
      await second.stop(50)
      other.close()
    }
    release!()
    await waitFor(() => store.deliveries.countByStatus().success === 1)
    expect(sends).toHaveLength(1)
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
    const add = (channel: 'email' | 'inbox', i: number): string =>
      t.store.deliveries.enqueue({ channel, notificationId: `ntf_${channel}${i}`, recipient: 'u', eventType: 't', maxAttempts: 3, nextAttemptAt: Date.now() - 1000 }, Date.now()).id
    t.store.tx(() => {
      for (let i = 0; i < 40; i++) add('email', i)
    })
    d.start()
    await waitFor(() => d.inFlight() === 2)
    // Behind 38 pending email rows, with 14 slots free: the inbox row goes at once.
    const row = add('inbox', 0)
    await waitFor(() => delivered.length === 1)
    expect(delivered).toEqual([row])
    expect(t.store.deliveries.countByStatus()).toMatchObject({ in_flight: 2, pending: 38 })
  })

  it('at start, re-offers at once the claims of processes that are gone, never those of one still running', async () => {
    const sent: string[] = []
    const { store, d } = setup({ send: async (row: ClaimedDelivery) => (sent.push(row.id), { outcome: { kind: 'success' } }) })
    enqueue(store, 4)
    const claimAs = (owner: string): string => store.deliveries.claimDue({ limit: 1, now: Date.now(), defaultTimeoutMs: 60_000, owner })[0]!.id
    // Another live process (the test runner's parent) still sending; one that exited; an earlier
    // start of this very process (same PID, another boot).
    const live = claimAs(`${process.ppid}.${processStart(process.ppid)}.n${PID_NAMESPACE}.`)
    const gone = claimAs(`${spawnSync(process.execPath, ['-e', '']).pid}.1.n${PID_NAMESPACE}.`)
    const earlier = claimAs(`${process.pid}.1.n${PID_NAMESPACE}.`)
    // Written before tokens named their namespace: cannot be told, so it waits for its lease.
    const legacy = claimAs(`${spawnSync(process.execPath, ['-e', '']).pid}.1.`)
    d.start()
    await waitFor(() => sent.length === 2)
    await new Promise((r) => setTimeout(r, 50))
    expect(sent.sort()).toEqual([gone, earlier].sort())
    expect(store.deliveries.get(live)!.status).toBe('in_flight')
    expect(store.deliveries.get(legacy)!.status).toBe('in_flight')
  })
})
