import { afterEach, describe, expect, it, vi } from 'vitest'
import { tempStore } from '../../test/helpers.js'
import { testConfig } from '../config.js'
import { ManualClock, systemClock } from '../lib/clock.js'
import { silentLogger } from '../log.js'
import { openStore, type Store } from '../store/index.js'
import type { ClaimedDelivery } from '../store/deliveries.js'
import { createDispatcher, type Dispatcher } from './dispatcher.js'
import { createStoreLease, describeLease, DELIVERY_LEASE, LEASE_TTL_MS, PROCESS_LEASE_OWNER } from './lease.js'

let cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanups.reverse()) await c()
  cleanups = []
})

function store(): { store: Store; path: string } {
  const t = tempStore()
  cleanups.push(t.cleanup)
  return { store: t.store, path: t.store.path }
}

const waitFor = async (cond: () => boolean | Promise<boolean>): Promise<void> => {
  for (let i = 0; i < 1000; i++) {
    if (await cond()) return
    await new Promise((r) => setTimeout(r, 5))
  }
  throw new Error('timed out')
}

describe('the delivery lease', () => {
  it('is held by one owner until it expires or is released; the holder renews it', async () => {
    const { store: s } = store()
    const clock = new ManualClock(Date.UTC(2026, 5, 1))
    const a = createStoreLease(s, { owner: 'a', clock, ttlMs: 15_000, renewMs: 5_000 })
    const b = createStoreLease(s, { owner: 'b', clock, ttlMs: 15_000, renewMs: 5_000 })
    expect(await a.acquire()).toBe(true)
    expect(await b.acquire()).toBe(false)
    expect(await s.locks!.get(DELIVERY_LEASE)).toMatchObject({ owner: 'a', acquiredAt: clock.now(), expiresAt: clock.now() + 15_000 })
    // Renewed at 5 s: the lease now runs to 20 s, so at 16 s it still holds.
    clock.advance(5_000)
    expect(await a.acquire()).toBe(true)
    clock.advance(11_000)
    expect(await b.acquire()).toBe(false)
    // No renewal for a whole lease (a killed holder): the other one takes it.
    clock.advance(4_000)
    expect(await b.acquire()).toBe(true)
    expect(await s.locks!.get(DELIVERY_LEASE)).toMatchObject({ owner: 'b', acquiredAt: clock.now() })
    // The former holder learns it at its next renewal, and stands by.
    expect(await a.acquire()).toBe(false)
    await b.release()
    expect(await s.locks!.get(DELIVERY_LEASE)).toBeNull()
    expect(await a.acquire()).toBe(true)
  })

  it('is shared by the dispatchers of one process, and released when the last of them lets go', async () => {
    const { store: s, path } = store()
    const other = openStore(path)
    cleanups.push(() => other.close())
    const one = createStoreLease(s)
    const two = createStoreLease(other)
    expect(await one.acquire()).toBe(true)
    expect(await two.acquire()).toBe(true)
    await one.release()
    expect((await s.locks!.get(DELIVERY_LEASE))?.owner).toBe(PROCESS_LEASE_OWNER)
    await two.release()
    expect(await s.locks!.get(DELIVERY_LEASE)).toBeNull()
  })

  it('logs standing by once per holder, and a takeover of an expired lease', async () => {
    const { store: s } = store()
    const clock = new ManualClock(Date.UTC(2026, 5, 1))
    const log = silentLogger()
    const info = vi.spyOn(log, 'info')
    const warn = vi.spyOn(log, 'warn')
    await createStoreLease(s, { owner: 'gone', clock }).acquire()
    const b = createStoreLease(s, { owner: 'b', clock, log })
    expect(await b.acquire()).toBe(false)
    expect(await b.acquire()).toBe(false)
    expect(info).toHaveBeenCalledTimes(1)
    expect(info.mock.calls[0]![1]).toMatch(/stands by/)
    clock.advance(LEASE_TTL_MS)
    expect(await b.acquire()).toBe(true)
    expect(warn.mock.calls[0]).toEqual([{ lease: DELIVERY_LEASE, previous: 'gone' }, expect.stringMatching(/took over/)])
  })

  it('is described for postbox stats without deciding anything by the PID in it', () => {
    const row = { name: DELIVERY_LEASE, owner: PROCESS_LEASE_OWNER, acquiredAt: 0, expiresAt: 15_000 }
    expect(describeLease(row, 1000)).toMatchObject({ owner: PROCESS_LEASE_OWNER, pid: process.pid, expires_at: new Date(15_000).toISOString(), expired: false })
    expect(describeLease({ ...row, owner: 'legacy.1.' }, 20_000)).toMatchObject({ pid: null, host: null, expired: true })
  })
})

describe('a dispatcher without the lease', () => {
  const dispatchers: Dispatcher[] = []
  afterEach(async () => {
    for (const d of dispatchers.splice(0)) await d.stop(50)
  })

  it('stands by (enqueues go to the holder) and takes over when the holder stops', async () => {
    const { store: s, path } = store()
    const other = openStore(path)
    cleanups.push(() => other.close())
    const sent: string[][] = [[], []]
    const make = (st: Store, owner: string, i: number): Dispatcher => {
      const d = createDispatcher({
        store: st, config: testConfig({ concurrency: 8, pollIntervalMs: 20 }), clock: systemClock, rng: () => 0.5, log: silentLogger(),
        channels: new Map([['inbox', { send: async (row: ClaimedDelivery) => (sent[i]!.push(row.id), { outcome: { kind: 'success' } }) }]]),
        lease: createStoreLease(st, { owner, renewMs: 50 }),
      })
      dispatchers.push(d)
      return d
    }
    const holder = make(s, 'holder', 0)
    holder.start()
    await waitFor(async () => (await s.locks!.get(DELIVERY_LEASE))?.owner === 'holder')
    const standby = make(other, 'standby', 1)
    standby.start()
    const enqueue = (st: Store, key: string) =>
      st.deliveries.enqueue({ channel: 'inbox', notificationId: 'ntf_1', recipient: key, eventType: 't', maxAttempts: 3, nextAttemptAt: Date.now() }, Date.now())
    await enqueue(other, 'via-standby')
    await waitFor(() => sent[0]!.length === 1)
    await new Promise((r) => setTimeout(r, 50))
    expect(sent[1]).toEqual([])
    await holder.stop(50)
    expect(await s.locks!.get(DELIVERY_LEASE)).toBeNull()
    await enqueue(s, 'after-stop')
    // The standby checks every second.
    await waitFor(async () => (await other.locks!.get(DELIVERY_LEASE))?.owner === 'standby')
    await waitFor(async () => (await s.deliveries.countByStatus()).success === 2)
    expect(sent.map((x) => x.length)).toEqual([1, 1])
  })
})
