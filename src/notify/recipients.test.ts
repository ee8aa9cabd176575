import { describe, expect, it } from 'vitest'
import { liftSync } from '../store/contract.js'
import type { UserRow } from '../store/directory.js'
import { isEmailShaped, resolveRecipients, type DirectoryLookup } from './recipients.js'

const user = (id: string, email: string | null = null): UserRow => ({
  id, email, name: null, locale: null, timezone: null, roles: [], teams: [], createdAt: 0, updatedAt: 0,
})
const users = [user('u1', 'ann@example.com'), user('u2'), user('u3', 'cy@example.com')]
const dir = liftSync<DirectoryLookup>({
  getUser: (id) => users.find((u) => u.id === id) ?? null,
  userByEmail: (e) => users.find((u) => u.email?.toLowerCase() === e.toLowerCase()) ?? null,
  members: (kind, name) =>
    (kind === 'role' && name === 'admin' ? ['u2', 'u3'] : kind === 'team' && name === 'red' ? ['u1', 'u3'] : []).map(
      (id) => users.find((u) => u.id === id)!,
    ),
  subscribers: (topic) => (topic === 't' ? ['team:red', 'user:u9'] : []),
})

describe('resolveRecipients', () => {
  it('expands selectors in first-seen order without duplicates', async () => {
    const r = await resolveRecipients(['user:u3', 'role:admin', 'u1', 'team:red', 'subscribers'], 't', dir)
    expect(r.map((x) => x.id)).toEqual(['u3', 'u2', 'u1', 'u9'])
  })
  it('keeps ids that are not in the directory (inbox needs no registered user)', async () => {
    expect(await resolveRecipients(['ghost'], 't', dir)).toEqual([{ id: 'ghost', kind: 'user', user: null, email: null }])
  })
  it('maps an email to its user, else to an external address', async () => {
    const r = await resolveRecipients(['ANN@example.com', 'out@example.org', 'u1', 'Out@Example.org'], 't', dir)
    expect(r.map((x) => [x.id, x.kind, x.email])).toEqual([
      ['u1', 'user', 'ann@example.com'],
      ['out@example.org', 'external', 'out@example.org'],
    ])
  })
  it('resolves subscribers of the topic only', async () => {
    expect(await resolveRecipients(['subscribers'], 'other', dir)).toEqual([])
    expect((await resolveRecipients(['subscribers'], 't', dir)).map((x) => x.id)).toEqual(['u1', 'u3', 'u9'])
  })
})

describe('isEmailShaped', () => {
  it.each(['ann@example.com', "o'brien@example.co.uk", 'a+tag@sub.example.org'])('accepts %j', (s) => expect(isEmailShaped(s)).toBe(true))
  // A list separator would let nodemailer reach another address than the one checked.
  it.each(['x,y@z.com', 'a;b@c.com', '"a"@b.com', 'a b@c.com', 'user:ann', 'ann@localhost'])('refuses %j', (s) => expect(isEmailShaped(s)).toBe(false))
})
