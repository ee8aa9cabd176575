import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { testConfig } from '../config.js'
import { ManualClock } from '../lib/clock.js'
import { createFanOut } from './fan-out.js'
import { tempStore } from '../../test/helpers.js'

let t: ReturnType<typeof tempStore>
beforeEach(() => {
  t = tempStore()
})
afterEach(() => t.cleanup())

const endpoint = (id: string, eventTypes: string[] | null) => ({
  id,
  url: 'https://example.com/hook',
  description: '',
  eventTypes,
  headers: {},
  method: 'POST' as const,
  timeoutMs: 15_000,
  maxConcurrency: 16,
  rateLimit: null,
  ordered: false,
  retrySchedule: null,
  signature: 'standard' as const,
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  metadata: {},
  disabled: false,
  disabledReason: null,
})

describe('fan-out endpoint cache', () => {
  it('reloads the endpoints on settings changes only, not on health changes', () => {
    const clock = new ManualClock()
    const { store } = t
    const fanOut = createFanOut({ store, config: testConfig(), clock })
    const active = vi.spyOn(store.endpoints, 'activeForApp')
    const send = (type: string) => store.tx(() => fanOut.store({ type, data: {} }))
    store.endpoints.insert(endpoint('ep_a', ['invoice.*']), clock.now())
    store.endpoints.insert(endpoint('ep_b', null), clock.now())
    expect(send('invoice.paid').deliveries).toBe(2)
    expect(send('user.created').deliveries).toBe(1)
    expect(active).toHaveBeenCalledTimes(1)
    // A failure, then the success that resets the endpoint's health: nothing a fan-out uses.
    store.endpoints.recordFailure('ep_a', true, clock.now())
    store.endpoints.recordSuccess('ep_a', clock.now())
    store.endpoints.pause('ep_b', clock.now() + 1000)
    expect(send('invoice.paid').deliveries).toBe(2)
    expect(active).toHaveBeenCalledTimes(1)
    // A changed filter is seen by the next event, also for a type already worked out.
    store.endpoints.update('ep_a', { ...endpoint('ep_a', ['user.*']) }, clock.now())
    expect(send('invoice.paid').deliveries).toBe(1)
    expect(send('user.created').deliveries).toBe(2)
    expect(active).toHaveBeenCalledTimes(2)
  })

  it('forgets what a rolled-back transaction loaded', () => {
    const clock = new ManualClock()
    const { store } = t
    const fanOut = createFanOut({ store, config: testConfig(), clock })
    const send = (type: string) => store.tx(() => fanOut.store({ type, data: {} }))
    store.endpoints.insert(endpoint('ep_a', null), clock.now())
    store.endpoints.insert(endpoint('ep_b', null), clock.now())
    // A disable whose transaction fails after the fan-out already loaded the endpoints without it
    // (as when publishing postbox.endpoint.disabled hits a full disk).
    expect(() =>
      store.tx(() => {
        store.endpoints.disable('ep_a', 'gone', clock.now())
        send('postbox.endpoint.disabled')
        throw new Error('disk full')
      }),
    ).toThrow('disk full')
    expect(store.endpoints.get('ep_a')!.disabled).toBe(false)
    expect(send('order.paid').deliveries).toBe(2)
  })
})
