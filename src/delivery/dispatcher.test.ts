import { afterEach, describe, expect, it } from 'vitest'
import { testConfig } from '../config.js'
import { systemClock } from '../lib/clock.js'
import { silentLogger } from '../log.js'
import type { Store } from '../store/index.js'
import type { ClaimedDelivery } from '../store/deliveries.js'
import { tempStore } from '../../test/helpers.js'
import type { ChannelResult, ChannelSender } from './channel.js'
import { createDispatcher, type Dispatcher } from './dispatcher.js'

let cleanup: (() => void) | undefined
let dispatcher: Dispatcher | undefined
afterEach(async () => {
  await dispatcher?.stop(50)
  cleanup?.()
})

function setup(sender: ChannelSender, concurrency = 8): { store: Store; d: Dispatcher } {
  const t = tempStore()
  cleanup = t.cleanup
  const d = createDispatcher({
    store: t.store, config: testConfig({ concurrency, pollIntervalMs: 20 }), clock: systemClock, rng: () => 0.5,
    log: silentLogger(), channels: new Map([['inbox', sender]]),
  })
  dispatcher = d
  return { store: t.store, d }
}

const enqueue = (store: Store, n: number): void =>
  store.tx(() => {
    for (let i = 0; i < n; i++) {
      store.deliveries.enqueue({ channel: 'inbox', dedupKey: `k${i}`, recipient: 'u', eventType: 't', maxAttempts: 3, nextAttemptAt: Date.now() }, Date.now())
    }
  })

const waitFor = async (cond: () => boolean): Promise<void> => {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setTimeout(r, 5))
  if (!cond()) throw new Error('timed out')
}

describe('dispatcher', () => {
  it('wakes on commit and settles every outcome', async () => {
    const seen: string[] = []
    const { store, d } = setup({ send: async (row: ClaimedDelivery) => (seen.push(row.id), { outcome: { kind: 'success' } }) })
    d.start()
    enqueue(store, 20)
    await waitFor(() => store.deliveries.countByStatus().success === 20)
    expect(new Set(seen).size).toBe(20)
    expect(d.inFlight()).toBe(0)
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
})
