import type { MemberRow, UserRow } from '../store/directory.js'

/** The directory lookups recipient resolution needs (the directory store satisfies it). */
export interface DirectoryLookup {
  getUser(id: string): UserRow | null
  userByEmail(email: string): UserRow | null
  members(kind: 'role' | 'team', name: string): MemberRow[]
  subscribers(topic: string): string[]
}

/** One resolved recipient: a user id (registered or not), or an external email address. */
export interface Recipient {
  /** The delivery's recipient: a user id, or the address for an external recipient. */
  id: string
  kind: 'user' | 'external'
  user: MemberRow | null
  email: string | null
}

// No list separators or quotes either: `x,y@z.com` would reach `y@z.com` through nodemailer.
const EMAIL = /^[^\s@<>:,;"()[\]\\]+@[^\s@<>:,;"'()[\]\\]+\.[^\s@<>:,;"'()[\]\\]+$/

/** True for an email-shaped selector. */
export function isEmailShaped(text: string): boolean {
  return EMAIL.test(text)
}

/**
 * Resolves selectors to recipients, in the order each was first seen, without duplicates:
 * `user:<id>` or a bare id, `role:<r>`, `team:<t>`, `subscribers` (enabled subscriptions to
 * `topic`, each principal expanded) and email-shaped strings (the user with that email, or
 * an external address only the email channel can reach).
 */
export function resolveRecipients(selectors: readonly string[], topic: string, dir: DirectoryLookup): Recipient[] {
  const out = new Map<string, Recipient>()
  const addUser = (id: string, known?: MemberRow): void => {
    if (id.length === 0 || out.has(id)) return
    const user = known ?? dir.getUser(id)
    out.set(id, { id, kind: 'user', user, email: user?.email ?? null })
  }
  const addMember = (u: MemberRow): void => addUser(u.id, u)
  const expand = (selector: string, allowSubscribers: boolean): void => {
    const s = selector.trim()
    if (s === 'subscribers') {
      if (allowSubscribers) for (const p of dir.subscribers(topic)) expand(p, false)
      return
    }
    if (s.startsWith('user:')) return addUser(s.slice(5))
    if (s.startsWith('role:')) return dir.members('role', s.slice(5)).forEach(addMember)
    if (s.startsWith('team:')) return dir.members('team', s.slice(5)).forEach(addMember)
    if (isEmailShaped(s)) {
      const user = dir.userByEmail(s)
      if (user) return addUser(user.id)
      const key = s.toLowerCase()
      if (!out.has(key)) out.set(key, { id: key, kind: 'external', user: null, email: s })
      return
    }
    addUser(s)
  }
  for (const s of selectors) expand(s, true)
  return [...out.values()]
}
