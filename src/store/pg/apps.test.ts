import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_BACKENDS, addDelivery, addEndpoint, openAdminBackend, type AdminBackend } from '../../../test/support/admin-backends.js'
import { freshPgDatabase } from '../../../test/support/pg.js'
import { createPgAdminFamilies, newPgAdminState } from './admin-families.js'
import { migratePg } from './migrations.js'
import { createPgPool, withPgTransaction } from './pool.js'

const NOW = Date.UTC(2026, 0, 1)

describe.each(ADMIN_BACKENDS)('apps store contract (%s)', (name) => {
  let b: AdminBackend
  beforeAll(async () => {
    b = await openAdminBackend(name)
  })
  afterAll(async () => {
    await b?.close()
  })

  it('has the default application, inserts once per id, updates and deletes for good', async () => {
    expect(await b.apps.exists('default')).toBe(true)
    expect((await b.apps.get('default'))!.name).toBe('Default')
    expect(await b.apps.insert({ id: 'app_a', name: 'A', metadata: { tier: 'gold' } }, NOW)).toBe(true)
    expect(await b.apps.insert({ id: 'app_a', name: 'again', metadata: {} }, NOW)).toBe(false)
    expect(await b.apps.get('app_a')).toEqual({ id: 'app_a', name: 'A', metadata: { tier: 'gold' }, createdAt: NOW, updatedAt: NOW })
    expect(await b.apps.exists('app_a')).toBe(true)
    expect(await b.apps.exists('app_none')).toBe(false)
    expect(await b.apps.update('app_a', { name: 'A2', metadata: {} }, NOW + 1)).toBe(true)
    expect(await b.apps.update('app_none', { name: 'x', metadata: {} }, NOW + 1)).toBe(false)
    expect(await b.apps.get('app_a')).toMatchObject({ name: 'A2', metadata: {}, updatedAt: NOW + 1 })

    await b.apps.insertPortalToken({ id: 'ptk_1', appId: 'app_a', readOnly: true, expiresAt: NOW + 1000, createdAt: NOW })
    await b.run(`INSERT INTO api_keys (id, name, role, app_id, hash, prefix, created_at) VALUES ('key_scoped', 'k', 'admin', 'app_a', 'h-scoped', 'p', 0)`)
    expect(await b.apps.softDelete('app_a', NOW + 2)).toBe(true)
    expect(await b.apps.softDelete('app_a', NOW + 3)).toBe(false)
    expect(await b.apps.get('app_a')).toBeNull()
    expect(await b.apps.exists('app_a')).toBe(false)
    expect(await b.apps.getPortalToken('ptk_1')).toBeNull()
    expect(await b.all(`SELECT revoked_at AS r FROM api_keys WHERE id = 'key_scoped'`)).toEqual([{ r: NOW + 2 }])
    // A deleted id is never reused.
    expect(await b.apps.insert({ id: 'app_a', name: 'A3', metadata: {} }, NOW + 4)).toBe(false)
  })

  it('stores portal tokens and drops the application’s expired ones as a new one comes', async () => {
    await b.apps.insert({ id: 'app_t', name: 'T', metadata: {} }, NOW)
    await b.apps.insertPortalToken({ id: 'ptk_old', appId: 'app_t', readOnly: false, expiresAt: NOW + 10, createdAt: NOW })
    expect(await b.apps.getPortalToken('ptk_old')).toEqual({ id: 'ptk_old', appId: 'app_t', readOnly: false, expiresAt: NOW + 10, createdAt: NOW })
    await b.apps.insertPortalToken({ id: 'ptk_new', appId: 'app_t', readOnly: true, expiresAt: NOW + 1000, createdAt: NOW + 10 })
    expect(await b.apps.getPortalToken('ptk_old')).toBeNull()
    expect(await b.apps.getPortalToken('ptk_new')).toEqual({ id: 'ptk_new', appId: 'app_t', readOnly: true, expiresAt: NOW + 1000, createdAt: NOW + 10 })
  })

  it('lists live applications newest first, page by page', async () => {
    // Later than the default application, which the schema created at the real time.
    const later = Date.now() + 86_400_000
    for (let i = 0; i < 4; i++) await b.apps.insert({ id: `app_l${i}`, name: `L${i}`, metadata: {} }, later + i)
    // Two with the same creation time: id breaks the tie, descending.
    await b.apps.insert({ id: 'app_l3b', name: 'L3b', metadata: {} }, later + 3)
    const all = (await b.apps.list({ limit: 100 })).data.map((a) => a.id)
    expect(all.slice(0, 5)).toEqual(['app_l3b', 'app_l3', 'app_l2', 'app_l1', 'app_l0'])
    expect(all).not.toContain('app_a')
    const p1 = await b.apps.list({ limit: 2 })
    const p2 = await b.apps.list({ limit: 2, cursor: p1.next_cursor })
    const p3 = await b.apps.list({ limit: 100, cursor: p2.next_cursor })
    expect([...p1.data, ...p2.data, ...p3.data].map((a) => a.id)).toEqual(all)
    expect(p3.next_cursor).toBeNull()
  })

  it('counts endpoints and deliveries per application', async () => {
    await b.apps.insert({ id: 'app_c', name: 'C', metadata: {} }, NOW)
    await addEndpoint(b, { id: 'ep_c1', appId: 'app_c' })
    await addEndpoint(b, { id: 'ep_c2', appId: 'app_c', deletedAt: NOW })
    await addEndpoint(b, { id: 'ep_d1' })
    const rows: [string, string, string][] = [
      ['dlv_c1', 'app_c', 'pending'],
      ['dlv_c2', 'app_c', 'pending'],
      ['dlv_c3', 'app_c', 'in_flight'],
      ['dlv_c4', 'app_c', 'dead'],
      ['dlv_d1', 'default', 'success'],
      ['dlv_d2', 'default', 'pending'],
      ['dlv_d3', 'default', 'pending'],
      ['dlv_d4', 'default', 'pending'],
    ]
    for (const [id, appId, status] of rows) await addDelivery(b, { id, appId, status, endpointId: appId === 'app_c' ? 'ep_c1' : 'ep_d1', nextAttemptAt: NOW })
    expect(await b.apps.counts('app_c')).toEqual({ endpoints: 1, deliveries: { pending: 2, in_flight: 1, success: 0, dead: 1, cancelled: 0 } })
    expect(await b.apps.counts('default')).toEqual({ endpoints: 1, deliveries: { pending: 3, in_flight: 0, success: 1, dead: 0, cancelled: 0 } })
    expect(await b.apps.countsByApp()).toEqual([
      { appId: 'app_c', status: 'dead', n: 1 },
      { appId: 'app_c', status: 'in_flight', n: 1 },
      { appId: 'app_c', status: 'pending', n: 2 },
      { appId: 'default', status: 'pending', n: 3 },
      { appId: 'default', status: 'success', n: 1 },
    ])
    expect(await b.apps.queuedByApp(10)).toEqual([
      { appId: 'default', status: 'pending', n: 3 },
      { appId: 'app_c', status: 'pending', n: 2 },
      { appId: 'app_c', status: 'in_flight', n: 1 },
    ])
    expect(await b.apps.queuedByApp(1)).toEqual([
      { appId: 'default', status: 'pending', n: 3 },
      { appId: 'app_c', status: 'in_flight', n: 1 },
    ])
  })

  it('sees an application another connection created, and one it deleted within a second', async () => {
    const other = b.other()
    expect(await other.apps.insert({ id: 'app_x', name: 'X', metadata: {} }, NOW)).toBe(true)
    expect(await b.apps.exists('app_x')).toBe(true)
    expect(await other.apps.softDelete('app_x', NOW + 1)).toBe(true)
    expect(await other.apps.exists('app_x')).toBe(false)
  })
})

describe.runIf(ADMIN_BACKENDS.includes('postgres'))('admin families over a transaction (postgres)', () => {
  it('share the store’s state, see their own writes, and leave nothing behind on rollback', async () => {
    const db = await freshPgDatabase()
    const pool = createPgPool(db.url, { max: 3 })
    try {
      await migratePg(pool)
      const state = newPgAdminState()
      const outer = createPgAdminFamilies(pool, state, (fn) => withPgTransaction(pool, fn))
      const before = await outer.eventTypes.version()
      await withPgTransaction(pool, async (t) => {
        const s = createPgAdminFamilies(t, state, (fn) => fn(t))
        await s.apps.insert({ id: 'app_tx', name: 'Tx', metadata: {} }, NOW)
        expect(await s.apps.exists('app_tx')).toBe(true)
        await s.eventTypes.put({ name: 'tx.type', description: '', schema: null, example: null, deprecated: false, archived: false }, NOW)
      })
      // The version moved on the store, not only on the transaction's family.
      expect(await outer.eventTypes.version()).toBeGreaterThan(before)
      expect(await outer.apps.get('app_tx')).toMatchObject({ id: 'app_tx' })
      await withPgTransaction(pool, async (t) => {
        const s = createPgAdminFamilies(t, state, (fn) => fn(t))
        await s.apps.insert({ id: 'app_rolled', name: 'R', metadata: {} }, NOW)
        throw new Error('abort')
      }).catch(() => {})
      expect(await outer.apps.get('app_rolled')).toBeNull()
    } finally {
      await pool.end()
      await db.drop()
    }
  })
})
