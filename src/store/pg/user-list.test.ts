import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { UserListFilter } from '../user-list.js'
import { BACKENDS, type DirectoryBackend } from '../../../test/support/pg-directory-backends.js'

const T0 = Date.UTC(2026, 0, 1)

describe.each(BACKENDS)('user list contract on $name', ({ open }) => {
  let b: DirectoryBackend
  beforeAll(async () => {
    b = await open()
  })
  afterAll(() => b.close())
  beforeEach(() => b.reset())

  it('filters by role, team and a case-folded needle, newest first, paging by (created, id)', async () => {
    const d = b.directory
    await d.putUser('ann', { email: 'Ann@Example.com', name: 'Ann Lee', roles: ['admin'], teams: ['core'] }, T0 + 1)
    await d.putUser('bob', { email: 'bob@example.com', roles: ['admin'] }, T0 + 2)
    await d.putUser('cid', { name: 'Cid ÉTÉ', teams: ['core'] }, T0 + 2)
    await d.putUser('dee', {}, T0)
    const none: UserListFilter = { role: null, team: null, q: null }
    const ids = async (f: Partial<UserListFilter>, limit = 10, after: { createdAt: number; id: string } | null = null) =>
      (await b.userList.list({ ...none, ...f }, { limit, after })).map((u) => u.id)
    expect(await ids({})).toEqual(['bob', 'cid', 'ann', 'dee'])
    expect(await ids({}, 2, { createdAt: T0 + 2, id: 'bob' })).toEqual(['cid', 'ann'])
    expect(await ids({}, -1, { createdAt: T0 + 1, id: 'ann' })).toEqual(['dee'])
    expect(await ids({ role: 'admin' })).toEqual(['bob', 'ann'])
    expect(await ids({ role: 'admin', team: 'core' })).toEqual(['ann'])
    expect(await ids({ q: 'EXAMPLE' })).toEqual(['bob', 'ann'])
    expect(await ids({ q: 'lee' })).toEqual(['ann'])
    expect(await ids({ q: 'CID' })).toEqual(['cid'])
    // Only ASCII folds on both sides (the needle is lowered fully, the columns ASCII-only).
    expect(await ids({ q: 'cid ÉTÉ' })).toEqual([])
    const [ann] = await b.userList.list({ ...none, q: 'ann' }, { limit: 1 })
    expect(ann).toEqual({ id: 'ann', email: 'Ann@Example.com', name: 'Ann Lee', locale: null, timezone: null, roles: ['admin'], teams: ['core'], createdAt: T0 + 1, updatedAt: T0 + 1 })
  })
})
