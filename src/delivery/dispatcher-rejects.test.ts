import { afterEach, describe, expect, it } from 'vitest'
import { testConfig } from '../config.js'
import { ManualClock } from '../lib/clock.js'
import { silentLogger } from '../log.js'
import { tempStore } from '../../test/helpers.js'
import type { ChannelSender } from './channel.js'
import { createDispatcher, type Dispatcher } from './dispatcher.js'

/** Issue #36, finding 7: a sender that rejects retried after a fixed second, ignoring the schedule. */
let cleanup: (() => Promise<void>) | undefined
let dispatcher: Dispatcher | undefined
afterEach(async () => {
  await dispatcher?.stop(50)
  await cleanup?.()
})

describe('a channel sender that rejects', () => {
  it('retries on the retry schedule with error internal, not a second later', async () => {
    const t = tempStore()
    cleanup = t.cleanup
    const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'))
    let calls = 0
    const sender: ChannelSender = {
      send: () => {
        calls++
        return Promise.reject(new Error('sender bug'))
      },
    }
    dispatcher = createDispatcher({
      store: t.store, config: testConfig({ pollIntervalMs: 20, retrySchedule: [120_000, 600_000] }), clock, rng: () => 0.5,
      log: silentLogger(), channels: new Map([['inbox', sender]]),
    })
    const now = clock.now()
    const { id } = await t.store.tx((s) => s.deliveries.enqueue({ channel: 'inbox', notificationId: 'ntf_1', recipient: 'u', eventType: 't', maxAttempts: 3, nextAttemptAt: now }, now))
    dispatcher.start()
    let row = await t.store.deliveries.get(id)
    for (let i = 0; i < 1000 && !(row?.status === 'pending' && row.attempts === 1); i++) {
      await new Promise((r) => setTimeout(r, 5))
      row = await t.store.deliveries.get(id)
    }
    expect(row).toMatchObject({ status: 'pending', attempts: 1, lastError: 'internal', nextAttemptAt: now + 120_000 })
    expect(calls).toBe(1)
  })
})
