import { z } from '@hono/zod-openapi'
import { jsonObject } from '../lib/json-object.js'
import { isValidTimeZone } from './schedule.js'
import { NAME_PATTERN, PRINCIPAL_PATTERN, USER_ID_PATTERN, USER_ID_RULE } from './recipients.js'

/**
 * Request and response schemas of the notification, directory and inbox API (docs/api.md, docs/notifications-basics.md).
 * One schema validates the request and documents it in /openapi.json.
 */

/** An application id: `[a-zA-Z0-9_.:-]{1,100}`. */
export const AppId = z.string().regex(/^[a-zA-Z0-9_.:-]{1,100}$/, 'must match [a-zA-Z0-9_.:-]{1,100}')
/** A notification tag: `[a-z0-9_.:-]{1,50}`. */
export const Tag = z.string().regex(/^[a-z0-9_.:-]{1,50}$/, 'must match [a-z0-9_.:-]{1,50}')
/** A notification topic: `[a-z0-9_.:-]{1,200}`. */
export const Topic = z.string().regex(/^[a-z0-9_.:-]{1,200}$/, 'must match [a-z0-9_.:-]{1,200}')
/**
 * The message of a field that takes a fixed set of forms: zod's own for a union is only
 * "Invalid input", which does not say what would have been accepted.
 */
const expected = (what: string) => ({
  error: (issue: { input?: unknown }) => (issue.input === undefined ? `is required: ${what}` : `expected ${what}`),
})
const TopicOrStar = z.union([z.literal('*'), Topic], expected('"*" or a topic matching [a-z0-9_.:-]{1,200}'))
const Channel = z.enum(['inbox', 'email', 'webhook'], expected('one of inbox, email, webhook'))
const TimeZone = z.string().min(1).max(100).refine(isValidTimeZone, 'must be an IANA time zone such as Europe/Paris')
const Locale = z.string().regex(/^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$/, 'must be a locale such as en, fr or fr-CA')
/** A user id: what preferences and `user:<id>` selectors can name, so every user is reachable. */
export const UserId = z.string().min(1).max(200).regex(USER_ID_PATTERN, USER_ID_RULE)
const Name = z.string().min(1).max(200).regex(NAME_PATTERN, 'must not contain spaces, control characters or ":"')
const Clock = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be HH:MM')

/**
 * Where the inbox UI links to: an absolute http(s) URL or a path on the app's own origin.
 * Inbox UIs render it as a link, so `javascript:`, `data:` and protocol-relative `//host` are refused.
 * No regex flags: /openapi.json publishes the source as an ECMA `pattern`, which has no place
 * for them, so the scheme's case-insensitivity is spelled out in character classes.
 */
const ActionUrl = z
  .string()
  .max(2048)
  .regex(/^(?:[hH][tT][tT][pP][sS]?:\/\/[^\s/?#]+[^\s]*|\/(?![/\\])[^\s]*)$/, 'must be an http(s) URL or a path starting with /')

/** `POST /v1/notifications` body. */
export const NotificationIn = z
  .object({
    topic: Topic.openapi({ example: 'comment.created' }),
    recipients: z.array(z.string().min(1).max(320)).max(10_000).optional().openapi({ example: ['user:u_1', 'role:admin'] }),
    title: z.string().max(1000).optional(),
    body: z.string().max(100_000).optional(),
    payload: jsonObject('must be an object').optional(),
    severity: z.enum(['info', 'warning', 'critical']).optional(),
    action_url: ActionUrl.optional(),
    channels: z.array(Channel).min(1).max(3).optional().openapi({ example: ['inbox', 'email'] }),
    dedup_key: z.string().min(1).max(200).optional(),
    tags: z.array(Tag).max(10).optional().openapi({ description: 'Up to 10 tags; inbox tabs filter and count by them', example: ['billing'] }),
    data: jsonObject('must be an object').optional().openapi({ description: 'The notification payload (the same as `payload`; give one of them)' }),
    app_id: AppId.optional(),
  })
  .openapi('NotificationIn')

/** `POST /v1/notifications` answer. */
export const NotificationAccepted = z
  .object({
    id: z.string(),
    deduplicated: z.boolean(),
    recipients: z.number().int(),
    deliveries: z.number().int(),
    warnings: z
      .array(z.object({ code: z.string(), message: z.string() }))
      .optional()
      .openapi({ description: 'Present when something asked for cannot be delivered as configured: `channel_not_configured` (email without POSTBOX_SMTP_URL). The notification is accepted all the same.' }),
  })
  .openapi('NotificationAccepted')

/** One recipient's channel in the operator's view: what happened, why, and the engagement times. */
export const ReceiptOut = z
  .object({
    recipient: z.string(),
    channel: z.enum(['inbox', 'email', 'notify-webhook']),
    delivery_id: z.string().nullable(),
    status: z.string().openapi({ description: 'pending | in_flight | success | dead | cancelled | suppressed' }),
    reason: z.string().nullable().openapi({
      description: 'suppressed: preference_disabled | no_address | channel_not_configured | digested; dead: the last error',
    }),
    delivered_at: z.string().nullable(),
    seen_at: z.string().nullable(),
    read_at: z.string().nullable(),
    clicked_at: z.string().nullable(),
    archived_at: z.string().nullable(),
  })
  .openapi('Receipt')

/** One notification in GET /v1/notifications. */
export const NotificationSummary = z
  .object({
    id: z.string(),
    app_id: z.string(),
    topic: z.string(),
    tags: z.array(z.string()),
    dedup_key: z.string().nullable(),
    recipients: z.number().int(),
    deliveries: z.number().int(),
    created_at: z.string(),
  })
  .openapi('NotificationSummary')

/** `GET /v1/notifications/:id`: the notification with per-recipient, per-channel delivery states. */
export const NotificationOut = z
  .object({
    id: z.string(),
    app_id: z.string(),
    topic: z.string(),
    tags: z.array(z.string()),
    dedup_key: z.string().nullable(),
    recipients: z.number().int(),
    created_at: z.string(),
    request: z.record(z.string(), z.unknown()),
    receipts: z.array(ReceiptOut).openapi({ description: 'Per recipient and channel, suppressed ones included; the first 1,000' }),
    receipts_truncated: z.boolean(),
    delivery_counts: z
      .object({ pending: z.number().int(), in_flight: z.number().int(), success: z.number().int(), dead: z.number().int(), cancelled: z.number().int() })
      .openapi({ description: 'All of the notification’s deliveries by status' }),
    deliveries_truncated: z.boolean().openapi({
      description: 'True when `deliveries` shows only the first 1,000; page through all of them with GET /v1/deliveries?notification_id=',
    }),
    deliveries: z.array(
      z.object({
        id: z.string(),
        recipient: z.string(),
        channel: z.enum(['inbox', 'email', 'notify-webhook']).openapi({
          description: 'The stored channel, as GET /v1/deliveries shows it: the `webhook` channel of a request is `notify-webhook`',
        }),
        status: z.string(),
        attempts: z.number().int(),
        next_attempt_at: z.string().nullable(),
        last_error: z.string().nullable(),
        completed_at: z.string().nullable(),
      }),
    ),
  })
  .openapi('Notification')

/** `PUT /v1/users/:id` body. */
export const UserIn = z
  .object({
    email: z.string().email().max(320).nullable().optional(),
    name: z.string().max(200).nullable().optional(),
    locale: Locale.nullable().optional(),
    timezone: TimeZone.nullable().optional(),
    roles: z.array(Name).max(100).optional(),
    teams: z.array(Name).max(100).optional(),
  })
  .openapi('UserIn')

/** A directory user. */
export const UserOut = z
  .object({
    id: z.string(),
    email: z.string().nullable(),
    name: z.string().nullable(),
    locale: z.string().nullable(),
    timezone: z.string().nullable(),
    roles: z.array(z.string()),
    teams: z.array(z.string()),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi('User')

/** `PUT`/`DELETE /v1/subscriptions` body. */
export const SubscriptionIn = z
  .object({
    topic: Topic,
    principal: z
      .string()
      .min(1)
      .max(210)
      .regex(PRINCIPAL_PATTERN, 'must be user:<id>, role:<r>, team:<t> or a bare id, without spaces, control characters, ":" or "*"')
      .openapi({ example: 'role:admin' }),
    enabled: z.boolean().optional().openapi({ description: 'Default true; false keeps the subscription but sends it nothing (PUT only)' }),
  })
  .openapi('SubscriptionIn')

/** A subscription. */
export const SubscriptionOut = z
  .object({ topic: z.string(), principal: z.string(), enabled: z.boolean(), created_at: z.string() })
  .openapi('Subscription')

/** Quiet hours: a local window in `tz`, which may cross midnight. */
export const QuietHoursIn = z.object({ tz: TimeZone, start: Clock, end: Clock }).openapi('QuietHours')

/** `PUT /v1/preferences` body. */
export const PreferenceIn = z
  .object({
    user_id: z.union([z.literal('*'), UserId], expected(`"*" or a user id of ${USER_ID_RULE.replace(/^must be /, '')}`)),
    topic: TopicOrStar,
    channel: z.union([z.literal('*'), Channel], expected('one of inbox, email, webhook, *')),
    enabled: z.boolean().optional(),
    digest: z.enum(['none', 'daily', 'weekly']).optional(),
    quiet_hours: QuietHoursIn.nullable().optional(),
  })
  .openapi('PreferenceIn')

/** A preference row. */
export const PreferenceOut = z
  .object({
    user_id: z.string(),
    topic: z.string(),
    channel: z.string(),
    enabled: z.boolean(),
    digest: z.enum(['none', 'daily', 'weekly']),
    quiet_hours: QuietHoursIn.nullable(),
    updated_at: z.string(),
  })
  .openapi('Preference')

/** `PUT /v1/templates` body; each PUT adds a version. */
export const TemplateIn = z
  .object({
    topic: Topic,
    channel: Channel,
    locale: Locale.optional(),
    subject: z.string().max(10_000).optional(),
    body: z.string().max(100_000).optional(),
    format: z.enum(['text', 'markdown', 'html']).optional(),
    active: z.boolean().optional(),
  })
  .openapi('TemplateIn')

/** A template version. */
export const TemplateOut = z
  .object({
    id: z.number().int(),
    topic: z.string(),
    channel: z.string(),
    locale: z.string(),
    version: z.number().int(),
    subject: z.string(),
    body: z.string(),
    format: z.enum(['text', 'markdown', 'html']),
    active: z.boolean(),
    created_at: z.string(),
  })
  .openapi('Template')

/** `POST /v1/users/:id/tokens` body. */
export const TokenIn = z
  .object({
    ttl_seconds: z.number().int().min(60).max(90 * 86_400).optional(),
    app_id: AppId.optional().openapi({ description: 'Limits the token to this application’s messages' }),
  })
  .openapi('UserTokenIn')

/** An end-user token and its expiry. */
export const TokenOut = z.object({ token: z.string(), expires_at: z.string(), app_id: z.string().nullable() }).openapi('UserToken')

/** A validated `POST /v1/notifications` body. */
export type NotificationInput = z.infer<typeof NotificationIn>
/** A validated `PUT /v1/users/:id` body. */
export type UserInputBody = z.infer<typeof UserIn>
/** A validated `PUT /v1/preferences` body. */
export type PreferenceInput = z.infer<typeof PreferenceIn>
/** A validated `PUT /v1/templates` body. */
export type TemplateInputBody = z.infer<typeof TemplateIn>
