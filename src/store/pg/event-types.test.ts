import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_BACKENDS, openAdminBackend, type AdminBackend } from '../../../test/support/admin-backends.js'

const NOW = Date.UTC(2026, 0, 1)

describe.each(ADMIN_BACKENDS)('event-types store contract (%s)', (name) => {
  let b: AdminBackend
  beforeAll(async () => {
    b = await openAdminBackend(name)
  })
  afterAll(async () => {
    await b?.close()
  })

  const type = (n: string, extra: { archived?: boolean; schema?: Record<string, unknown> | boolean | null } = {}) => ({
    name: n,
    description: `about ${n}`,
    schema: extra.schema === undefined ? { type: 'object' } : extra.schema,
    example: { id: 1 },
    deprecated: false,
    archived: extra.archived ?? false,
  })

  it('creates and replaces a type, its version moving on each put', async () => {
    const v0 = await b.eventTypes.version()
    const first = await b.eventTypes.put(type('order.created'), NOW)
    expect(first).toEqual({ ...type('order.created'), version: 1, createdAt: NOW, updatedAt: NOW })
    expect(await b.eventTypes.version()).toBeGreaterThan(v0)
    const v1 = await b.eventTypes.version()
    const second = await b.eventTypes.put({ ...type('order.created', { schema: true }), deprecated: true, example: null }, NOW + 5)
    expect(second).toEqual({ name: 'order.created', description: 'about order.created', schema: true, example: null, deprecated: true, archived: false, version: 2, createdAt: NOW, updatedAt: NOW + 5 })
    expect(await b.eventTypes.version()).toBeGreaterThan(v1)
    expect(await b.eventTypes.get('order.created')).toEqual(second)
    expect(await b.eventTypes.get('nope')).toBeNull()
    await b.eventTypes.put(type('order.empty', { schema: null }), NOW)
    expect((await b.eventTypes.get('order.empty'))!.schema).toBeNull()
  })

  it('lists by name in byte order, archived ones only when asked, page by page', async () => {
    // Upper case sorts before lower case bytewise (SQLite's BINARY), whatever the database's locale.
    for (const n of ['b.two', 'B.one', 'a.one', 'c.three']) await b.eventTypes.put(type(n), NOW)
    await b.eventTypes.put(type('a.archived', { archived: true }), NOW)
    const names = (await b.eventTypes.all()).map((t) => t.name)
    expect(names).toEqual([...names].sort())
    expect(names.indexOf('B.one')).toBeLessThan(names.indexOf('a.one'))
    const live = (await b.eventTypes.list({ limit: 100, includeArchived: false })).data.map((t) => t.name)
    expect(live).toEqual(names.filter((n) => n !== 'a.archived'))
    const p1 = await b.eventTypes.list({ limit: 3, includeArchived: true })
    const p2 = await b.eventTypes.list({ limit: 100, includeArchived: true, cursor: p1.next_cursor })
    expect([...p1.data, ...p2.data].map((t) => t.name)).toEqual(names)
    expect(p2.next_cursor).toBeNull()
  })

  it('version moves within a second of another connection’s put', async () => {
    const other = b.other()
    const before = await b.eventTypes.version()
    await other.eventTypes.put(type('from.elsewhere'), NOW)
    const deadline = Date.now() + 5000
    while ((await b.eventTypes.version()) === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
    expect(await b.eventTypes.version()).toBeGreaterThan(before)
    expect((await b.eventTypes.get('from.elsewhere'))!.version).toBe(1)
  })
})
