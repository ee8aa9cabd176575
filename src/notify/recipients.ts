import type { Async } from '../store/contract.js'
import type { MemberRow, UserRow } from '../store/directory.js'

/** The directory lookups recipient resolution needs (the directory store satisfies its Async form). */
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

/** Control characters (C0, DEL, C1): part of no user id, role or team name, nor of an email address. */
const CONTROL = String.raw`\x00-\x1f\x7f-\x9f`
// No list separators, quotes or control characters either: `x,y@z.com` would reach `y@z.com` through nodemailer.
const LOCAL = String.raw`[^\s@<>:,;"()[\]\\${CONTROL}]+`
const DOMAIN = String.raw`[^\s@<>:,;"'()[\]\\${CONTROL}]+`
const EMAIL = new RegExp(`^${LOCAL}@${DOMAIN}\\.${DOMAIN}$`)

/**
 * The one user-id rule (PUT /v1/users, tokens, subscriptions, preferences, recipients): 1–200
 * characters without whitespace, control characters, ":" (the selector separator) or "*" (the
 * preference wildcard), so every stored id can be named by a `user:<id>` selector.
 */
export const USER_ID_PATTERN = new RegExp(String.raw`^[^\s:*${CONTROL}]{1,200}$`)
/** A role or team name: 1–200 characters without whitespace, control characters or ":". */
export const NAME_PATTERN = new RegExp(String.raw`^[^\s:${CONTROL}]{1,200}$`)
/** A subscription principal: `user:<id>`, `role:<r>`, `team:<t>` or a bare id (never "*"). */
export const PRINCIPAL_PATTERN = new RegExp(String.raw`^((user|role|team):)?[^\s:*${CONTROL}]{1,200}$`)
/** What a user id must look like, for error messages. */
export const USER_ID_RULE = 'must be 1–200 characters without spaces, control characters, ":" or "*"'

/** True when `id` is a valid user id. */
export function isUserId(id: string): boolean {
  return USER_ID_PATTERN.test(id)
}

/**
 * Why a recipient selector names nobody valid, or null when it is fine: `user:<id>` and bare
 * ids must be user ids, `role:`/`team:` names must be names. Checked on the trimmed selector,
 * as resolveRecipients reads it.
 */
export function selectorError(selector: string): string | null {
  const s = selector.trim()
  if (s === 'subscribers' || isEmailShaped(s)) return null
  if (s.startsWith('role:') || s.startsWith('team:')) {
    return NAME_PATTERN.test(s.slice(5)) ? null : `${s.slice(0, 4)} name must be 1–200 characters without spaces, control characters or ":"`
  }
  const id = s.startsWith('user:') ? s.slice(5) : s
  return isUserId(id) ? null : `is neither an email address nor a user id: a user id ${USER_ID_RULE}`
}

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
export async function resolveRecipients(selectors: readonly string[], topic: string, dir: Async<DirectoryLookup>): Promise<Recipient[]> {
  const out = new Map<string, Recipient>()
  const addUser = async (id: string, known?: MemberRow): Promise<void> => {
    if (id.length === 0 || out.has(id)) return
    const user = known ?? (await dir.getUser(id))
    out.set(id, { id, kind: 'user', user, email: user?.email ?? null })
  }
  const addMembers = async (kind: 'role' | 'team', name: string): Promise<void> => {
    for (const u of await dir.members(kind, name)) await addUser(u.id, u)
  }
  const expand = async (selector: string, allowSubscribers: boolean): Promise<void> => {
    const s = selector.trim()
    if (s === 'subscribers') {
      if (allowSubscribers) for (const p of await dir.subscribers(topic)) await expand(p, false)
      return
    }
    if (s.startsWith('user:')) return addUser(s.slice(5))
    if (s.startsWith('role:')) return addMembers('role', s.slice(5))
    if (s.startsWith('team:')) return addMembers('team', s.slice(5))
    if (isEmailShaped(s)) {
      const user = await dir.userByEmail(s)
      if (user) return addUser(user.id)
      const key = s.toLowerCase()
      if (!out.has(key)) out.set(key, { id: key, kind: 'external', user: null, email: s })
      return
    }
    return addUser(s)
  }
  for (const s of selectors) await expand(s, true)
  return [...out.values()]
}
