import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_BACKENDS, openAdminBackend, type AdminBackend } from '../../../test/support/admin-backends.js'
import { newId } from '../../lib/ids.js'

const NOW = Date.UTC(2026, 0, 1)

describe.each(ADMIN_BACKENDS)('keys store contract (%s)', (name) => {
  let b: AdminBackend
  beforeAll(async () => {
    b = await openAdminBackend(name)
  })
  afterAll(async () => {
    await b?.close()
  })

  const key = (n: number, extra: { role?: 'admin' | 'publisher' | 'viewer'; appId?: string | null } = {}) => ({
    id: newId('key', NOW + n),
    name: `key ${n}`,
    role: extra.role ?? 'admin',
    appId: extra.appId,
    hash: `hash-${name}-${n}`,
    prefix: `pb_${n}`,
    createdAt: NOW + n,
  })

  it('inserts, reads by id and hash, touches and revokes', async () => {
    const k = key(1)
    await b.keys.insert(k)
    const row = await b.keys.get(k.id)
    expect(row).toEqual({ id: k.id, name: 'key 1', role: 'admin', appId: null, hash: k.hash, prefix: 'pb_1', createdAt: NOW + 1, lastUsedAt: null, revokedAt: null })
    expect(await b.keys.byHash(k.hash)).toEqual(row)
    expect(await b.keys.get('key_missing')).toBeNull()
    expect(await b.keys.byHash('nope')).toBeNull()
    await b.keys.touch(k.id, NOW + 10)
    expect((await b.keys.get(k.id))!.lastUsedAt).toBe(NOW + 10)
    expect(await b.keys.revoke(k.id, NOW + 20)).toBe(true)
    expect(await b.keys.revoke(k.id, NOW + 30)).toBe(false)
    expect(await b.keys.revoke('key_missing', NOW)).toBe(false)
    expect((await b.keys.get(k.id))!.revokedAt).toBe(NOW + 20)
  })

  it('counts active admins of every application only', async () => {
    const before = await b.keys.countActiveAdmins()
    await b.keys.insert(key(2))
    await b.keys.insert(key(3, { appId: 'app_1' }))
    await b.keys.insert(key(4, { role: 'viewer' }))
    expect(await b.keys.countActiveAdmins()).toBe(before + 1)
    expect(typeof (await b.keys.countActiveAdmins())).toBe('number')
    expect((await b.keys.byHash(`hash-${name}-3`))!.appId).toBe('app_1')
  })

  it('lists newest first by id, page by page', async () => {
    for (let n = 10; n < 15; n++) await b.keys.insert(key(n))
    const all = (await b.keys.list({ limit: 100 })).data.map((k) => k.id)
    expect(all).toEqual([...all].sort().reverse())
    const first = await b.keys.list({ limit: 2 })
    expect(first.data.map((k) => k.id)).toEqual(all.slice(0, 2))
    expect(first.next_cursor).not.toBeNull()
    const second = await b.keys.list({ limit: 2, cursor: first.next_cursor })
    expect(second.data.map((k) => k.id)).toEqual(all.slice(2, 4))
    const last = await b.keys.list({ limit: all.length, cursor: null })
    expect(last.next_cursor).toBeNull()
    // Another list's cursor reads as the first page, as on SQLite (decodeIdCursor gives null).
    expect((await b.keys.list({ limit: 2, cursor: 'not-a-cursor' })).data.map((k) => k.id)).toEqual(all.slice(0, 2))
  })
})
