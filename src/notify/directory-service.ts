import type { z } from '@hono/zod-openapi'
import type { Store } from '../store/index.js'
import type { KeySlice, ListSlice } from '../store/directory.js'
import { subscriptionCursor, templateCursor } from '../store/directory.js'
import { userListCursor } from '../store/user-list.js'
import type { Clock } from '../lib/clock.js'
import { decodeOffsetCursor, encodeOffsetCursor, pageSize, type Page } from '../lib/cursor.js'
import { errors } from '../errors.js'
import { templateSyntaxError } from './render.js'
import { markdownTooDeep } from './markdown-depth.js'
import type { PreferenceInput, PreferenceOut, SubscriptionOut, TemplateInputBody, TemplateOut, UserInputBody, UserOut } from './schemas.js'
import { isUserId, PRINCIPAL_PATTERN, USER_ID_RULE } from './recipients.js'
import { ineffectiveFields } from './preferences.js'
import { preferenceJson, subscriptionJson, templateJson, userJson } from './presenters.js'

/** `?limit=&cursor=` of a directory list; the cursor is a `next_cursor` of the same list. */
export interface PageRequest {
  limit?: number
  cursor?: string | null
}

/** `GET /v1/users` filters. */
export interface UserQuery {
  role?: string
  team?: string
  /** A case-insensitive substring of the id, email or name. */
  q?: string
}

type User = z.infer<typeof UserOut>
type Subscription = z.infer<typeof SubscriptionOut>
type Preference = z.infer<typeof PreferenceOut>
type Template = z.infer<typeof TemplateOut>

/** Users, subscriptions, preferences and templates. */
export interface DirectoryService {
  users: {
    put(id: string, input: UserInputBody): Promise<{ user: User; created: boolean }>
    get(id: string): Promise<User>
    delete(id: string): Promise<void>
    /** Newest first, filtered by role, team and a substring. */
    list(query: UserQuery, page?: PageRequest): Promise<Page<User>>
  }
  subscriptions: {
    /** Subscribes (`enabled` defaults to true); `enabled: false` keeps the row but stops its notifications. */
    put(input: { topic: string; principal: string; enabled?: boolean }): Promise<Subscription>
    delete(input: { topic: string; principal: string }): Promise<void>
    list(topic?: string, page?: PageRequest): Promise<Page<Subscription>>
  }
  preferences: {
    put(input: PreferenceInput): Promise<Preference>
    list(userId: string, page?: PageRequest): Promise<Page<Preference>>
  }
  templates: {
    put(input: TemplateInputBody): Promise<Template>
    list(topic?: string, page?: PageRequest): Promise<Page<Template>>
  }
}

const badCursor = () => errors.validation([{ field: 'cursor', message: 'is not a cursor returned by this list', in: 'query' }])

/** One page of a list read by position (a user's preferences: at most their topics × channels). */
async function pageOf<T, J>(page: PageRequest | undefined, read: (slice: ListSlice) => Promise<T[]>, toJson: (row: T) => J): Promise<Page<J>> {
  const limit = pageSize(page?.limit)
  const offset = page?.cursor ? decodeOffsetCursor(page.cursor) : 0
  if (offset === null) throw badCursor()
  const rows = await read({ limit: limit + 1, offset })
  const more = rows.length > limit
  return { data: rows.slice(0, limit).map(toJson), next_cursor: more ? encodeOffsetCursor(offset + limit) : null }
}

/**
 * One page of a list read by sort key: the rows after the cursor's row, and as next cursor the
 * key of the page's last row. `decode` refuses cursors of other lists.
 */
export async function pageByKey<T, K, J>(
  page: PageRequest | undefined,
  cursor: { encode(row: T): string; decode(cursor: string): K | null },
  read: (slice: KeySlice<K>) => Promise<T[]>,
  toJson: (row: T) => J,
): Promise<Page<J>> {
  const limit = pageSize(page?.limit)
  const after = page?.cursor ? cursor.decode(page.cursor) : null
  if (page?.cursor && after === null) throw badCursor()
  const rows = await read({ limit: limit + 1, after })
  if (rows.length <= limit) return { data: rows.map(toJson), next_cursor: null }
  const data = rows.slice(0, limit)
  return { data: data.map(toJson), next_cursor: cursor.encode(data[limit - 1]!) }
}

/** Throws 400 validation_failed unless `id` follows the one user-id rule (see USER_ID_PATTERN). */
export function assertUserId(id: string, field = 'id', where = 'path'): void {
  if (!isUserId(id)) throw errors.validation([{ field, message: USER_ID_RULE, in: where }])
}

/** Throws 400 validation_failed unless a subscription principal names a valid user id, role or team. */
function assertPrincipal(principal: string): void {
  if (!PRINCIPAL_PATTERN.test(principal)) {
    throw errors.validation([{ field: 'principal', message: `must be user:<id>, role:<r>, team:<t> or a bare id; a user id ${USER_ID_RULE}`, in: 'body' }])
  }
}

/** A principal in canonical form: a bare id becomes `user:<id>`. */
export function normalizePrincipal(principal: string): string {
  return /^(user|role|team):/.test(principal) ? principal : `user:${principal}`
}

/** Builds the directory service over the store. */
export function createDirectoryService(store: Store, clock: Clock): DirectoryService {
  return {
    users: {
      async put(id, input) {
        assertUserId(id)
        const { user, created } = await store.directory.putUser(id, input, clock.now())
        return { user: userJson(user), created }
      },
      async get(id) {
        assertUserId(id)
        const u = await store.directory.getUser(id)
        if (!u) throw errors.notFound('User')
        return userJson(u)
      },
      async delete(id) {
        assertUserId(id)
        if (!(await store.directory.deleteUser(id))) throw errors.notFound('User')
      },
      list: (query, page) =>
        pageByKey(page, userListCursor, (slice) => store.userList.list({ role: query.role ?? null, team: query.team ?? null, q: query.q ?? null }, slice), userJson),
    },
    subscriptions: {
      async put({ topic, principal, enabled }) {
        assertPrincipal(principal)
        return subscriptionJson(await store.directory.putSubscription(topic, normalizePrincipal(principal), clock.now(), enabled ?? true))
      },
      async delete({ topic, principal }) {
        assertPrincipal(principal)
        if (!(await store.directory.deleteSubscription(topic, normalizePrincipal(principal)))) throw errors.notFound('Subscription')
      },
      list(topic, page) {
        const cursor = {
          encode: subscriptionCursor.encode,
          // With ?topic=, only a cursor whose row is of that topic is a position in the list.
          decode(c: string) {
            const key = subscriptionCursor.decode(c)
            return key !== null && (topic === undefined || key.topic === topic) ? key : null
          },
        }
        return pageByKey(page, cursor, (slice) => store.directory.listSubscriptions(topic, slice), subscriptionJson)
      },
    },
    preferences: {
      async put(p) {
        if (p.user_id !== '*') assertUserId(p.user_id, 'user_id', 'body')
        const ineffective = ineffectiveFields({ channel: p.channel, digest: p.digest, quietHours: p.quiet_hours })
        if (ineffective.length > 0) throw errors.validation(ineffective.map((f) => ({ ...f, in: 'body' })))
        return preferenceJson(
          await store.directory.putPreference({
            userId: p.user_id,
            topic: p.topic,
            channel: p.channel,
            enabled: p.enabled ?? true,
            digest: p.digest ?? 'none',
            quietHours: p.quiet_hours ?? null,
            updatedAt: clock.now(),
          }),
        )
      },
      list: async (userId, page) => {
        // "*" lists the rows that apply to every user.
        if (userId !== '*') assertUserId(userId)
        return pageOf(page, (slice) => store.directory.preferencesOfUser(userId, slice), preferenceJson)
      },
    },
    templates: {
      put: async (t) => {
        const issues = (['subject', 'body'] as const).flatMap((field) => {
          const error = templateSyntaxError(t[field] ?? '')
          return error === null ? [] : [{ field, message: `invalid Liquid template: ${error}`, in: 'body' }]
        })
        const tooDeep = t.format === 'markdown' ? markdownTooDeep(t.body ?? '') : null
        if (tooDeep !== null) issues.push({ field: 'body', message: tooDeep, in: 'body' })
        if (issues.length > 0) throw errors.validation(issues)
        return templateJson(
          await store.directory.putTemplate(
            {
              topic: t.topic,
              channel: t.channel,
              locale: t.locale ?? 'en',
              subject: t.subject ?? '',
              body: t.body ?? '',
              format: t.format ?? 'text',
              active: t.active ?? true,
            },
            clock.now(),
          ),
        )
      },
      list: (topic, page) => pageByKey(page, templateCursor, (slice) => store.directory.listTemplates(topic, slice), templateJson),
    },
  }
}
