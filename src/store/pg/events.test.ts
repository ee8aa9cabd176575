import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { BACKENDS, coreBackend, type CoreFamilies } from '../../../test/support/pg-core-backends.js'

describe.each(BACKENDS)('events contract (%s)', (kind) => {
  const backend = coreBackend(kind)
  let f: CoreFamilies
  beforeAll(() => backend.setup())
  afterAll(() => backend.teardown())
  beforeEach(async () => {
    f = await backend.fresh()
  })

  const id = (i: number): string => `evt_${String(i).padStart(26, '0')}`

  it('inserts, reads back by id and by client id per application, with the same values', async () => {
    await f.events.insert({ id: id(1), clientId: 'c-1', type: 'order.paid', orderingKey: 'o1', body: '{"a":1}', createdAt: 1000 })
    await f.events.insert({ id: id(2), appId: 'app_x', clientId: 'c-1', type: 'order.paid', orderingKey: null, body: '{}', createdAt: 2000 })
    expect(await f.events.get(id(1))).toEqual({ id: id(1), appId: 'default', clientId: 'c-1', type: 'order.paid', orderingKey: 'o1', body: '{"a":1}', createdAt: 1000 })
    expect(await f.events.get('evt_missing')).toBeNull()
    expect((await f.events.byClientId('app_x', 'c-1'))?.id).toBe(id(2))
    expect((await f.events.byClientId('default', 'c-1'))?.id).toBe(id(1))
    expect(await f.events.byClientId('default', 'c-2')).toBeNull()
  })

  it('refuses a second event with the same client id in one application', async () => {
    await f.events.insert({ id: id(1), clientId: 'dup', type: 't', orderingKey: null, body: '{}', createdAt: 1 })
    await expect(f.events.insert({ id: id(2), clientId: 'dup', type: 't', orderingKey: null, body: '{}', createdAt: 2 })).rejects.toThrow()
  })

  it('inserts a batch as insert does each, and all or none when one repeats a client id', async () => {
    await f.events.insertMany([])
    await f.events.insertMany([
      { id: id(1), clientId: 'c-1', type: 'order.paid', orderingKey: 'o1', body: '{"a":1}', createdAt: 1000 },
      { id: id(2), appId: 'app_x', clientId: null, type: 'order.sent', orderingKey: null, body: '{}', createdAt: 1000 },
    ])
    expect(await f.events.get(id(1))).toEqual({ id: id(1), appId: 'default', clientId: 'c-1', type: 'order.paid', orderingKey: 'o1', body: '{"a":1}', createdAt: 1000 })
    expect(await f.events.get(id(2))).toEqual({ id: id(2), appId: 'app_x', clientId: null, type: 'order.sent', orderingKey: null, body: '{}', createdAt: 1000 })
    await expect(
      f.events.insertMany([
        { id: id(3), clientId: 'c-2', type: 't', orderingKey: null, body: '{}', createdAt: 2 },
        { id: id(4), clientId: 'c-1', type: 't', orderingKey: null, body: '{}', createdAt: 2 },
      ]),
    ).rejects.toThrow()
    expect(await f.events.get(id(3))).toBeNull()
  })

  it('reads several client ids at once, in input order, null where none', async () => {
    await f.events.insert({ id: id(1), clientId: 'c-1', type: 't', orderingKey: null, body: '{}', createdAt: 1 })
    await f.events.insert({ id: id(2), appId: 'app_x', clientId: 'c-1', type: 't', orderingKey: null, body: '{}', createdAt: 2 })
    expect(await f.events.byClientIds([])).toEqual([])
    const out = await f.events.byClientIds([
      { appId: 'app_x', clientId: 'c-1' },
      { appId: 'default', clientId: 'c-9' },
      { appId: 'default', clientId: 'c-1' },
      { appId: 'app_x', clientId: 'c-1' },
    ])
    expect(out.map((e) => e?.id ?? null)).toEqual([id(2), null, id(1), id(2)])
    expect(out[2]).toEqual(await f.events.get(id(1)))
  })

  it('pages newest first, by type and by application, with cursors', async () => {
    for (let i = 0; i < 9; i++) {
      await f.events.insert({ id: id(i), appId: i % 2 ? 'app_odd' : undefined, clientId: null, type: i % 3 === 0 ? 'rare.type' : 'common', orderingKey: null, body: '{}', createdAt: i })
    }
    const first = await f.events.list({ limit: 2, type: 'rare.type' })
    const second = await f.events.list({ limit: 2, type: 'rare.type', cursor: first.next_cursor })
    expect([...first.data, ...second.data].map((e) => e.id)).toEqual([id(6), id(3), id(0)])
    expect(second.next_cursor).toBeNull()
    expect((await f.events.list({ limit: 10, appId: 'app_odd' })).data.map((e) => e.id)).toEqual([id(7), id(5), id(3), id(1)])
    expect((await f.events.list({ limit: 10, appId: 'default', type: 'common' })).data.map((e) => e.id)).toEqual([id(8), id(4), id(2)])
    const all = await f.events.list({ limit: 4 })
    expect(all.data.map((e) => e.id)).toEqual([id(8), id(7), id(6), id(5)])
    expect((await f.events.list({ limit: 100, cursor: all.next_cursor })).data).toHaveLength(5)
    // Another list's cursor reads as none.
    expect((await f.events.list({ limit: 1, cursor: 'bm90LWEtY3Vyc29y' })).data[0]!.id).toBe(id(8))
  })
})
