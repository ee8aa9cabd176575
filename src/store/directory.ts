import { decodeKeyCursor, encodeKeyCursor } from '../lib/cursor.js'
/** A directory user, mapped to camelCase. */
export interface UserRow {
  id: string
  email: string | null
  name: string | null
  locale: string | null
  timezone: string | null
  roles: string[]
  teams: string[]
  createdAt: number
  updatedAt: number
}

/** The fields of a user that recipient resolution and rendering read (what `members` returns). */
export type MemberRow = Pick<UserRow, 'id' | 'email' | 'name' | 'locale' | 'timezone'>

/** The fields `putUser` writes (absent fields keep their stored value). */
export interface UserInput {
  email?: string | null
  name?: string | null
  locale?: string | null
  timezone?: string | null
  roles?: string[]
  teams?: string[]
}

/** A topic subscription of one principal (`user:<id>`, `role:<r>`, `team:<t>`). */
export interface SubscriptionRow {
  topic: string
  principal: string
  enabled: boolean
  createdAt: number
}

/** Quiet hours of a preference: local `HH:MM` window in `tz`. */
export interface QuietHours {
  tz: string
  start: string
  end: string
}

/** One preference row; `*` is the wildcard for user, topic and channel. */
export interface PreferenceRow {
  userId: string
  topic: string
  channel: string
  enabled: boolean
  digest: 'none' | 'daily' | 'weekly'
  quietHours: QuietHours | null
  updatedAt: number
}

/** One template version. */
export interface TemplateRow {
  id: number
  topic: string
  channel: string
  locale: string
  version: number
  subject: string
  body: string
  format: 'text' | 'markdown' | 'html'
  active: boolean
  createdAt: number
}

/** What `putTemplate` needs; the version is assigned. */
export type TemplateInput = Omit<TemplateRow, 'id' | 'version' | 'createdAt'>

/** Users and their roles/teams, subscriptions, preferences and versioned templates. */
export interface DirectoryStore {
  putUser(id: string, input: UserInput, now: number): { user: UserRow; created: boolean }
  getUser(id: string): UserRow | null
  userByEmail(email: string): UserRow | null
  deleteUser(id: string): boolean
  /** Users holding a role or team, in id order (without roles and teams: a fan-out does not read them). */
  members(kind: 'role' | 'team', name: string): MemberRow[]
  /** Creates or updates a subscription; a disabled one stays listed but `subscribers` skips it. */
  putSubscription(topic: string, principal: string, now: number, enabled?: boolean): SubscriptionRow
  deleteSubscription(topic: string, principal: string): boolean
  /**
   * Subscriptions (of one topic, or all) newest first, then by topic and principal; `slice.limit`
   * rows after the row whose key is `slice.after` (in a topic's list, its topic is not read).
   */
  listSubscriptions(topic?: string, slice?: KeySlice<SubscriptionKey>): SubscriptionRow[]
  /** Principals of the enabled subscriptions to `topic`, oldest first. */
  subscribers(topic: string): string[]
  putPreference(row: PreferenceRow): PreferenceRow
  preferencesOfUser(userId: string, slice?: ListSlice): PreferenceRow[]
  /** Every row that may apply to (user, topic): the user's and `*` rows, for the topic and `*`. */
  preferencesFor(userId: string, topic: string): PreferenceRow[]
  /**
   * A lookup of the rows that may apply to each user for one topic, built with two queries
   * plus one per user that has rows of their own, so a fan-out does not query per recipient.
   */
  preferencesForTopic(topic: string, userIds: readonly string[]): (userId: string) => PreferenceRow[]
  putTemplate(input: TemplateInput, now: number): TemplateRow
  /** Template versions (of one topic, or all) newest first; `slice.limit` rows after the id `slice.after`. */
  listTemplates(topic?: string, slice?: KeySlice<number>): TemplateRow[]
  activeTemplates(topic: string, channel: string): TemplateRow[]
}

/** A window of a list read by position. */
export interface ListSlice {
  limit: number
  offset: number
}

/** A window of a list read by sort key: `limit` rows (-1: all) after the row whose key is `after` (none: from the start). */
export interface KeySlice<K> {
  limit: number
  after?: K | null
}

/** Where a subscription sits in the lists: newest first, then by topic, then by principal. */
export type SubscriptionKey = Pick<SubscriptionRow, 'createdAt' | 'topic' | 'principal'>

/** Cursors of the subscription lists (`sub/<created_at>/<topic>/<principal>`); topics hold no `/`. */
export const subscriptionCursor = {
  encode: (r: SubscriptionKey): string => encodeKeyCursor('sub', [r.createdAt, r.topic, r.principal]),
  decode(cursor: string): SubscriptionKey | null {
    const f = decodeKeyCursor(cursor, 'sub', 3)
    if (f === null || !/^\d{1,15}$/.test(f[0]!)) return null
    return { createdAt: Number(f[0]), topic: f[1]!, principal: f[2]! }
  },
}

/** Cursors of the template lists (`tpl/<id>` of the last row). */
export const templateCursor = {
  encode: (r: Pick<TemplateRow, 'id'>): string => encodeKeyCursor('tpl', [r.id]),
  decode(cursor: string): number | null {
    const f = decodeKeyCursor(cursor, 'tpl', 1)
    return f !== null && /^\d{1,15}$/.test(f[0]!) ? Number(f[0]) : null
  },
}
