import type { Store } from '../store/index.js'
import type { InboxStateChange, StreamEvent } from '../store/inbox.js'
import { messageJson, STREAM_LOG_SIZE } from '../store/inbox.js'
import type { KeySlice, ListSlice, PreferenceRow, SubscriptionRow, TemplateRow, UserRow } from '../store/directory.js'
import { subscriptionCursor, templateCursor } from '../store/directory.js'
import type { ChannelSender, DispatchObserver } from '../delivery/channel.js'
import type { Config } from '../config.js'
import type { Log } from '../log.js'
import { toIso, type Clock, type Rng } from '../lib/clock.js'
import { parseJsonOr } from '../lib/json.js'
import { decodeOffsetCursor, encodeOffsetCursor, pageSize, type Page } from '../lib/cursor.js'
import { errors } from '../errors.js'
import { createPipeline, type RenderingDeps, type SendResult } from './pipeline.js'
import { templateSyntaxError } from './render.js'
import { createInboxStreamHub, type InboxStreamHub } from './inbox-stream.js'
import { issueUserToken, verifyUserToken, type UserTokenClaims } from './tokens.js'
import { createInboxChannel } from './channels/inbox.js'
import { createEmailChannel } from './channels/email.js'
import { createNotifyWebhookChannel, type PublishEvent } from './channels/notify-webhook.js'
import type { NotificationInput, PreferenceInput, TemplateInputBody, UserInputBody } from './schemas.js'
import { isUserId, PRINCIPAL_PATTERN, selectorError, USER_ID_RULE } from './recipients.js'
import { ineffectiveFields } from './preferences.js'

/** docs/notifications-basics.md: a keepalive comment every 25 s keeps proxies from closing an idle stream. */
export const STREAM_KEEPALIVE_MS = 25_000

/** Dependencies of the notify service. */
export interface NotifyDeps {
  store: Store
  config: Config
  clock: Clock
  rng: Rng
  log: Log
  /** The key that signs end-user tokens (see loadTokenKey). */
  tokenKey: Buffer | string
  /** Publishes an event through the webhook engine (the notify layer never imports webhooks). */
  publishEvent: PublishEvent
  /** Keepalive comment interval of the SSE inbox stream; 25 s by default (tests shorten it). */
  streamKeepaliveMs?: number
  /** Live events one stream may hold unsent before it is cut off; the replay log's length by default. */
  streamMaxQueued?: number
  /** The dispatcher's observer (metrics): also counts the inbox deliveries written at accept and digest members. */
  observer?: DispatchObserver
  /** Tests replace the template renderer and the render budget's timer. */
  rendering?: RenderingDeps
}

/** `GET /v1/inbox` options; all optional. */
export interface InboxListOptions {
  status?: 'unread' | 'read' | 'all'
  archived?: boolean
  topic?: string
  limit?: number
  cursor?: string | null
}

/** One user's inbox: every operation is confined to that user's messages. */
export interface UserInbox {
  list(opts?: InboxListOptions): { data: Record<string, unknown>[]; unread_count: number; next_cursor: string | null }
  unreadCount(): number
  read(ids: readonly string[]): { updated: number }
  unread(ids: readonly string[]): { updated: number }
  seen(ids: readonly string[]): { updated: number }
  archive(ids: readonly string[]): { updated: number }
  unarchive(ids: readonly string[]): { updated: number }
  readAll(): { updated: number }
  /** Logged stream events after `afterSeq` (Last-Event-ID replay). */
  replay(afterSeq: number): StreamEvent[]
  /** The id of the user's latest stream event (0 before the first). */
  lastSeq(): number
}

/** `?limit=&cursor=` of a directory list; the cursor is a `next_cursor` of the same list. */
export interface PageRequest {
  limit?: number
  cursor?: string | null
}

/** One page of a list read by position (a user's preferences: at most their topics × channels). */
function pageOf<T>(page: PageRequest | undefined, read: (slice: ListSlice) => T[], toJson: (row: T) => Record<string, unknown>): Page<Record<string, unknown>> {
  const limit = pageSize(page?.limit)
  const offset = page?.cursor ? decodeOffsetCursor(page.cursor) : 0
  if (offset === null) throw errors.validation([{ field: 'cursor', message: 'is not a cursor returned by this list', in: 'query' }])
  const rows = read({ limit: limit + 1, offset })
  const more = rows.length > limit
  return { data: rows.slice(0, limit).map(toJson), next_cursor: more ? encodeOffsetCursor(offset + limit) : null }
}

/**
 * One page of a list read by sort key: the rows after the cursor's row, and as next cursor the
 * key of the page's last row. `decode` refuses cursors of other lists.
 */
function pageByKey<T, K>(
  page: PageRequest | undefined,
  cursor: { encode(row: T): string; decode(cursor: string): K | null },
  read: (slice: KeySlice<K>) => T[],
  toJson: (row: T) => Record<string, unknown>,
): Page<Record<string, unknown>> {
  const limit = pageSize(page?.limit)
  const after = page?.cursor ? cursor.decode(page.cursor) : null
  if (page?.cursor && after === null) throw errors.validation([{ field: 'cursor', message: 'is not a cursor returned by this list', in: 'query' }])
  const rows = read({ limit: limit + 1, after })
  if (rows.length <= limit) return { data: rows.map(toJson), next_cursor: null }
  const data = rows.slice(0, limit)
  return { data: data.map(toJson), next_cursor: cursor.encode(data[limit - 1]!) }
}

/**
 * At most this many deliveries are embedded in `GET /v1/notifications/:id` (a role of 10,000 users
 * on two channels has 20,000); `delivery_counts` covers them all, and `GET
 * /v1/deliveries?notification_id=` pages through them.
 */
export const NOTIFICATION_DELIVERIES_SHOWN = 1000

/** The notification side of Postbox: pipeline, directory, tokens, inboxes, live streams and channels. */
export interface NotifyService {
  notifications: {
    send(input: NotificationInput): SendResult
    get(id: string): Record<string, unknown>
  }
  users: {
    put(id: string, input: UserInputBody): { user: Record<string, unknown>; created: boolean }
    get(id: string): Record<string, unknown>
    delete(id: string): void
  }
  subscriptions: {
    /** Subscribes (`enabled` defaults to true); `enabled: false` keeps the row but stops its notifications. */
    put(input: { topic: string; principal: string; enabled?: boolean }): Record<string, unknown>
    delete(input: { topic: string; principal: string }): void
    list(topic?: string, page?: PageRequest): Page<Record<string, unknown>>
  }
  preferences: {
    put(input: PreferenceInput): Record<string, unknown>
    list(userId: string, page?: PageRequest): Page<Record<string, unknown>>
  }
  templates: {
    put(input: TemplateInputBody): Record<string, unknown>
    list(topic?: string, page?: PageRequest): Page<Record<string, unknown>>
  }
  tokens: {
    issue(userId: string, ttlSeconds?: number): { token: string; expires_at: string }
    verify(token: string): UserTokenClaims | null
  }
  inbox(userId: string): UserInbox
  stream: InboxStreamHub
  /** How often the SSE stream sends a keepalive comment. */
  streamKeepaliveMs: number
  /** Live events one stream may hold unsent; past it the client is cut off and replays on reconnect. */
  streamMaxQueued: number
  channels: { inbox: ChannelSender; email: ChannelSender; 'notify-webhook': ChannelSender }
  /** Releases SMTP connections. */
  close(): void
}

/** The API JSON of a user. */
export const userJson = (u: UserRow) => ({
  id: u.id,
  email: u.email,
  name: u.name,
  locale: u.locale,
  timezone: u.timezone,
  roles: u.roles,
  teams: u.teams,
  created_at: toIso(u.createdAt),
  updated_at: toIso(u.updatedAt),
})
const subscriptionJson = (s: SubscriptionRow) => ({ topic: s.topic, principal: s.principal, enabled: s.enabled, created_at: toIso(s.createdAt) })
const preferenceJson = (p: PreferenceRow) => ({
  user_id: p.userId,
  topic: p.topic,
  channel: p.channel,
  enabled: p.enabled,
  digest: p.digest,
  quiet_hours: p.quietHours,
  updated_at: toIso(p.updatedAt),
})
const templateJson = (t: TemplateRow) => ({
  id: t.id,
  topic: t.topic,
  channel: t.channel,
  locale: t.locale,
  version: t.version,
  subject: t.subject,
  body: t.body,
  format: t.format,
  active: t.active,
  created_at: toIso(t.createdAt),
})

/** Throws 400 validation_failed unless `id` follows the one user-id rule (see USER_ID_PATTERN). */
function assertUserId(id: string, field = 'id', where = 'path'): void {
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

/** Builds the notify service and its three channel senders. */
export function createNotifyService(deps: NotifyDeps): NotifyService {
  const { store, config, clock, rng, log, tokenKey } = deps
  const schedule = config.notificationRetrySchedule
  const hub = createInboxStreamHub()
  const send = createPipeline({ store, config, clock, log, hub, observer: deps.observer, rendering: deps.rendering })
  const email = createEmailChannel({ store, clock, rng, log, schedule, smtpUrl: config.smtpUrl, from: config.emailFrom, observer: deps.observer })

  const inbox = (userId: string): UserInbox => {
    const publish = (r: { updated: number; events: StreamEvent[] }) => {
      hub.publish(userId, r.events)
      return { updated: r.updated }
    }
    const change = (c: InboxStateChange) => (ids: readonly string[]) =>
      publish(store.inbox.changeState(userId, [...new Set(ids)], c, clock.now()))
    return {
      list(o = {}) {
        const page = store.inbox.list(userId, {
          status: o.status ?? 'all',
          archived: o.archived ?? false,
          topic: o.topic,
          limit: pageSize(o.limit),
          cursor: o.cursor ?? null,
        })
        return { data: page.data.map(messageJson), unread_count: page.unreadCount, next_cursor: page.nextCursor }
      },
      unreadCount: () => store.inbox.unreadCount(userId),
      read: change('read'),
      unread: change('unread'),
      seen: change('seen'),
      archive: change('archive'),
      unarchive: change('unarchive'),
      readAll: () => publish(store.inbox.readAll(userId, clock.now())),
      replay: (afterSeq) => store.inbox.replay(userId, afterSeq),
      lastSeq: () => store.inbox.lastSeq(userId),
    }
  }

  return {
    notifications: {
      send: (input) => {
        const recipients = input.recipients ?? ['subscribers']
        const issues = recipients.flatMap((r, i) => {
          const message = selectorError(r)
          return message === null ? [] : [{ field: `recipients.${i}`, message, in: 'body' }]
        })
        if (issues.length > 0) throw errors.validation(issues.slice(0, 50))
        return send({
          topic: input.topic,
          recipients,
          title: input.title ?? null,
          body: input.body ?? null,
          payload: input.payload ?? {},
          severity: input.severity ?? 'info',
          action_url: input.action_url ?? null,
          channels: [...new Set(input.channels ?? (['inbox'] as const))],
          dedup_key: input.dedup_key ?? null,
        })
      },
      get(id) {
        const n = store.notifications.get(id)
        if (!n) throw errors.notFound('Notification')
        const counts = store.deliveries.countsByNotification(id)
        const total = Object.values(counts).reduce((a, b) => a + b, 0)
        return {
          id: n.id,
          topic: n.topic,
          dedup_key: n.dedupKey,
          recipients: n.recipients,
          created_at: toIso(n.createdAt),
          request: parseJsonOr<Record<string, unknown>>(n.request, {}),
          delivery_counts: counts,
          deliveries_truncated: total > NOTIFICATION_DELIVERIES_SHOWN,
          deliveries: store.deliveries.byNotification(id, NOTIFICATION_DELIVERIES_SHOWN).map((d) => ({
            id: d.id,
            recipient: d.recipient ?? '',
            // The stored name, as GET /v1/deliveries shows it: `notify-webhook` for the webhook channel.
            channel: d.channel,
            status: d.status,
            attempts: d.attempts,
            next_attempt_at: d.status === 'pending' ? toIso(d.nextAttemptAt) : null,
            last_error: d.lastError,
            completed_at: toIso(d.completedAt),
          })),
        }
      },
    },
    users: {
      put(id, input) {
        assertUserId(id)
        const { user, created } = store.directory.putUser(id, input, clock.now())
        return { user: userJson(user), created }
      },
      get(id) {
        assertUserId(id)
        const u = store.directory.getUser(id)
        if (!u) throw errors.notFound('User')
        return userJson(u)
      },
      delete(id) {
        assertUserId(id)
        if (!store.directory.deleteUser(id)) throw errors.notFound('User')
      },
    },
    subscriptions: {
      put({ topic, principal, enabled }) {
        assertPrincipal(principal)
        return subscriptionJson(store.directory.putSubscription(topic, normalizePrincipal(principal), clock.now(), enabled ?? true))
      },
      delete({ topic, principal }) {
        assertPrincipal(principal)
        if (!store.directory.deleteSubscription(topic, normalizePrincipal(principal))) throw errors.notFound('Subscription')
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
      put(p) {
        if (p.user_id !== '*') assertUserId(p.user_id, 'user_id', 'body')
        const ineffective = ineffectiveFields({ channel: p.channel, digest: p.digest, quietHours: p.quiet_hours })
        if (ineffective.length > 0) throw errors.validation(ineffective.map((f) => ({ ...f, in: 'body' })))
        return preferenceJson(
          store.directory.putPreference({
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
      list: (userId, page) => {
        // "*" lists the rows that apply to every user.
        if (userId !== '*') assertUserId(userId)
        return pageOf(page, (slice) => store.directory.preferencesOfUser(userId, slice), preferenceJson)
      },
    },
    templates: {
      put: (t) => {
        const issues = (['subject', 'body'] as const).flatMap((field) => {
          const error = templateSyntaxError(t[field] ?? '')
          return error === null ? [] : [{ field, message: `invalid Liquid template: ${error}`, in: 'body' }]
        })
        if (issues.length > 0) throw errors.validation(issues)
        return templateJson(
          store.directory.putTemplate(
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
    tokens: {
      issue(userId, ttlSeconds) {
        assertUserId(userId)
        const expiresAt = clock.now() + (ttlSeconds !== undefined ? ttlSeconds * 1000 : 86_400_000)
        return { token: issueUserToken(tokenKey, userId, expiresAt), expires_at: toIso(expiresAt) }
      },
      verify: (token) => verifyUserToken(tokenKey, token, clock.now()),
    },
    inbox,
    stream: hub,
    streamKeepaliveMs: deps.streamKeepaliveMs ?? STREAM_KEEPALIVE_MS,
    streamMaxQueued: deps.streamMaxQueued ?? STREAM_LOG_SIZE,
    channels: {
      inbox: createInboxChannel({ store, hub, clock, rng, log, schedule }),
      email,
      'notify-webhook': createNotifyWebhookChannel({ publishEvent: deps.publishEvent, clock, rng, log, schedule }),
    },
    close: () => email.close(),
  }
}
