import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { testConfig } from '../config.js'
import { ManualClock } from '../lib/clock.js'
import { createFanOut } from './fan-out.js'
import { tempStore } from '../../test/helpers.js'
import type { Store } from '../store/index.js'
import { openPgStore } from '../store/pg/index.js'
import { freshPgDatabase, PG_URL } from '../../test/support/pg.js'

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

/** `s` with its activeForApp calls counted (the fan-out reads endpoints through the transaction's store). */
function counting(s: Store, calls: { n: number }): Store {
  const endpoints = { ...s.endpoints, activeForApp: (appId: string) => ((calls.n += 1), s.endpoints.activeForApp(appId)) }
  return { ...s, endpoints }
}

describe('fan-out endpoint cache', () => {
  it('reloads the endpoints on settings changes only, not on health changes', async () => {
    const clock = new ManualClock()
    const { store } = t
    const fanOut = createFanOut({ store, config: testConfig(), clock })
    const active = { n: 0 }
    const send = async (type: string) => (await store.tx((s) => fanOut.store(counting(s, active), { type, data: {} }))).deliveries
    await store.endpoints.insert(endpoint('ep_a', ['invoice.*']), clock.now())
    await store.endpoints.insert(endpoint('ep_b', null), clock.now())
    expect(await send('invoice.paid')).toBe(2)
    expect(await send('user.created')).toBe(1)
    expect(active.n).toBe(1)
    // A failure, then the success that resets the endpoint's health: nothing a fan-out uses.
    await store.endpoints.recordFailure('ep_a', true, clock.now())
    await store.endpoints.recordSuccess('ep_a', clock.now())
    await store.endpoints.pause('ep_b', clock.now() + 1000)
    expect(await send('invoice.paid')).toBe(2)
    expect(active.n).toBe(1)
    // A changed filter is seen by the next event, also for a type already worked out.
    await store.endpoints.update('ep_a', { ...endpoint('ep_a', ['user.*']) }, clock.now())
    expect(await send('invoice.paid')).toBe(1)
    expect(await send('user.created')).toBe(2)
    expect(active.n).toBe(2)
  })

  it('reads the endpoints once per batch of one application', async () => {
    const clock = new ManualClock()
    const { store } = t
    const fanOut = createFanOut({ store, config: testConfig(), clock })
    const active = { n: 0 }
    await store.endpoints.insert(endpoint('ep_a', null), clock.now())
    const out = await store.tx((s) => fanOut.storeMany(counting(s, active), [{ type: 'a', data: {} }, { type: 'b', data: {}, clientId: 'c1' }, { type: 'b', data: {}, clientId: 'c1' }]))
    expect(out.map((o) => [o.deliveries, o.deduplicated])).toEqual([[1, false], [1, false], [1, true]])
    expect(active.n).toBe(1)
  })

  it('forgets what a rolled-back transaction loaded', async () => {
    const clock = new ManualClock()
    const { store } = t
    const fanOut = createFanOut({ store, config: testConfig(), clock })
    await store.endpoints.insert(endpoint('ep_a', null), clock.now())
    await store.endpoints.insert(endpoint('ep_b', null), clock.now())
    // A disable whose transaction fails after the fan-out already loaded the endpoints without it
    // (as when publishing postbox.endpoint.disabled hits a full disk).
    await expect(
      store.tx(async (s) => {
        await s.endpoints.disable('ep_a', 'gone', clock.now())
        await fanOut.store(s, { type: 'postbox.endpoint.disabled', data: {} })
        throw new Error('disk full')
      }),
    ).rejects.toThrow('disk full')
    expect((await store.endpoints.get('ep_a'))!.disabled).toBe(false)
    expect((await store.tx((s) => fanOut.store(s, { type: 'order.paid', data: {} }))).deliveries).toBe(2)
  })
})

/** The fan-out's batch path on each backend: SQLite, and PostgreSQL when POSTBOX_TEST_PG_URL is set. */
const backends: { name: string; open: () => Promise<{ store: Store; close: () => Promise<void> }> }[] = [
  {
    name: 'sqlite',
    open: () => {
      const tmp = tempStore()
      return Promise.resolve({ store: tmp.store, close: () => Promise.resolve(tmp.cleanup()) })
    },
  },
  ...(PG_URL
    ? [
        {
          name: 'postgres',
          open: async () => {
            const db = await freshPgDatabase()
            const store = await openPgStore(db.url)
            return {
              store: store as Store,
              close: async () => {
                await store.close()
                await db.drop()
              },
            }
          },
        },
      ]
    : []),
]

describe.each(backends)('fan-out storeMany ($name)', ({ open }) => {
  it('answers per event as store does: repeats of stored and of earlier client ids, filters, delayed events', async () => {
    const { store, close } = await open()
    try {
      const clock = new ManualClock()
      const fanOut = createFanOut({ store, config: testConfig(), clock })
      await store.endpoints.insert(endpoint('ep_all', null), clock.now())
      await store.endpoints.insert(endpoint('ep_b', ['b']), clock.now())
      const stored = await store.tx((s) => fanOut.store(s, { type: 'b', data: {}, clientId: 'old' }))
      const later = clock.now() + 60_000
      const out = await store.tx((s) =>
        fanOut.storeMany(s, [
          { type: 'a', data: { n: 1 } },
          { type: 'b', data: {}, clientId: 'c1' },
          { type: 'b', data: {}, clientId: 'old' },
          { type: 'b', data: {}, clientId: 'c1' },
          { type: 'a', data: {}, deliverAt: later },
          { type: 'b', data: {}, appId: 'default', clientId: 'c2', orderingKey: 'k' },
        ]),
      )
      expect(out.map((o) => [o.deliveries, o.deduplicated])).toEqual([[1, false], [2, false], [2, true], [2, true], [1, false], [2, false]])
      expect(out[2]!.id).toBe(stored.id)
      expect(out[3]!.id).toBe(out[1]!.id)
      expect(out[4]!.deliver_at).toBe(new Date(later).toISOString())
      expect(new Set(out.map((o) => o.id)).size).toBe(5)
      const dl = await store.deliveries.byEvent(out[4]!.id)
      expect(dl.map((d) => [d.endpointId, d.nextAttemptAt])).toEqual([['ep_all', later]])
      expect((await store.deliveries.byEvent(out[5]!.id)).map((d) => d.orderingKey)).toEqual(['k', 'k'])
      expect(await store.events.get(out[0]!.id)).toMatchObject({ type: 'a', appId: 'default', clientId: null, createdAt: clock.now() })
      expect(JSON.parse((await store.events.get(out[0]!.id))!.body)).toMatchObject({ id: out[0]!.id, type: 'a', data: { n: 1 } })
      expect(await store.tx((s) => fanOut.storeMany(s, []))).toEqual([])
    } finally {
      await close()
    }
  })
})
