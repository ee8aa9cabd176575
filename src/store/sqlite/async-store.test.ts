import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { tempStore } from '../../../test/helpers.js'
import type { Store } from '../index.js'

const event = (id: string) => ({ id, clientId: null, type: 't', orderingKey: null, body: '{}', createdAt: 1 })

describe('the asynchronous SQLite store', () => {
  let t: ReturnType<typeof tempStore>
  let store: Store
  beforeEach(() => {
    t = tempStore()
    store = t.store
  })
  afterEach(() => t.cleanup())

  it('commits what a transaction wrote and resolves with its result', async () => {
    const r = await store.tx(async (s) => {
      await s.events.insert(event('evt_1'))
      return 42
    })
    expect(r).toBe(42)
    expect(await store.events.get('evt_1')).not.toBeNull()
  })

  it('rolls back a transaction that throws, and a savepoint alone when a nested one does', async () => {
    await expect(
      store.tx(async (s) => {
        await s.events.insert(event('evt_a'))
        throw new Error('no')
      }),
    ).rejects.toThrow('no')
    expect(await store.events.get('evt_a')).toBeNull()
    await store.tx(async (s) => {
      await s.events.insert(event('evt_b'))
      await expect(
        s.tx(async (n) => {
          await n.events.insert(event('evt_c'))
          throw new Error('inner')
        }),
      ).rejects.toThrow('inner')
    })
    expect(await store.events.get('evt_b')).not.toBeNull()
    expect(await store.events.get('evt_c')).toBeNull()
  })

  it('keeps calls from outside an open transaction out of it: they run after it ends', async () => {
    const order: string[] = []
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const tx = store.tx(async (s) => {
      await s.events.insert(event('evt_in'))
      order.push('tx wrote')
      await gate
      throw new Error('rolled back')
    })
    // Issued while the transaction is open: it must neither see nor join it.
    const outside = store.events.insert(event('evt_out')).then(() => order.push('outside wrote'))
    const read = store.events.get('evt_in').then((row) => order.push(`outside read ${row === null ? 'nothing' : 'row'}`))
    await new Promise((r) => setTimeout(r, 20))
    expect(order).toEqual(['tx wrote'])
    release()
    await expect(tx).rejects.toThrow('rolled back')
    await Promise.all([outside, read])
    expect(order).toEqual(['tx wrote', 'outside wrote', 'outside read nothing'])
    expect(await store.events.get('evt_out')).not.toBeNull()
  })

  it('runs transactions one after another, never interleaved', async () => {
    const log: string[] = []
    const run = (name: string) =>
      store.tx(async (s) => {
        log.push(`${name} begin`)
        await s.events.insert(event(`evt_${name}`))
        await new Promise((r) => setTimeout(r, 5))
        log.push(`${name} end`)
      })
    await Promise.all([run('a'), run('b'), run('c')])
    expect(log).toEqual(['a begin', 'a end', 'b begin', 'b end', 'c begin', 'c end'])
  })

  it('wakes due listeners after the commit, not for a rolled-back enqueue', async () => {
    let woken = 0
    store.onDue(() => woken++)
    const ev = event('evt_due')
    await store.tx(async (s) => {
      await s.events.insert(ev)
      await s.deliveries.enqueue({ eventId: ev.id, channel: 'email', recipient: 'u1', eventType: 't', nextAttemptAt: 0, maxAttempts: 1 }, 1)
      expect(woken).toBe(0)
    })
    expect(woken).toBe(1)
  })
})
