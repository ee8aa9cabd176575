import { z } from '@hono/zod-openapi'
import { decodeInboxCursor, MAX_PAGE_SIZE } from '../lib/cursor.js'
import { AppId, Tag, Topic } from './schemas.js'

/**
 * Request and response schemas of the end-user inbox API (docs/notifications.md). One schema
 * validates the request and documents it in /openapi.json.
 */

const time = (description: string) => z.string().nullable().openapi({ description })

/** One inbox message as the list returns it. */
export const InboxMessageOut = z
  .object({
    id: z.string(),
    notification_id: z.string().nullable(),
    app_id: z.string(),
    topic: z.string(),
    title: z.string(),
    body: z.string(),
    body_format: z.string().openapi({ description: 'text | markdown | html' }),
    severity: z.string(),
    action_url: z.string().nullable(),
    tags: z.array(z.string()),
    data: z.record(z.string(), z.unknown()),
    seen: z.boolean(),
    read: z.boolean(),
    archived: z.boolean(),
    seen_at: time('when first seen'),
    read_at: time('when read (null again after unread)'),
    clicked_at: time('when first clicked'),
    archived_at: time('when archived (null again after unarchive)'),
    snoozed_until: time('while snoozed, when it comes back'),
    created_at: z.string(),
  })
  .openapi('InboxMessage')

/** `?tags=a,b`: a comma-separated list of tags. */
const TagList = z
  .string()
  .max(600)
  .transform((s) => [...new Set(s.split(',').filter((t) => t !== ''))])
  .pipe(z.array(Tag).max(20))

/** `GET /v1/inbox` query. */
export const InboxQuery = z.object({
  status: z.enum(['unread', 'read', 'all']).optional().openapi({ param: { name: 'status', in: 'query' } }),
  archived: z.enum(['true', 'false']).optional().openapi({ param: { name: 'archived', in: 'query' } }),
  snoozed: z.enum(['true', 'false']).optional().openapi({
    param: { name: 'snoozed', in: 'query' },
    description: 'true lists the snoozed messages instead (every other list leaves them out)',
  }),
  topic: Topic.optional().openapi({
    param: { name: 'topic', in: 'query' },
    description: 'A filtered page reads at most 10,000 messages: it may hold fewer than `limit` (even none) while next_cursor continues the read.',
  }),
  tags: TagList.optional().openapi({ param: { name: 'tags', in: 'query' }, description: 'Messages with any of these tags, comma-separated', type: 'string' }),
  app_id: AppId.optional().openapi({ param: { name: 'app_id', in: 'query' } }),
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).optional().openapi({ param: { name: 'limit', in: 'query' } }),
  cursor: z
    .string()
    .max(400)
    .refine((c) => decodeInboxCursor(c) !== null, 'is not a cursor returned by this list')
    .optional()
    .openapi({ param: { name: 'cursor', in: 'query' } }),
  token: z.string().max(2048).optional().openapi({ param: { name: 'token', in: 'query' } }),
})

/** `GET /v1/inbox` answer. */
export const InboxList = z
  .object({ data: z.array(InboxMessageOut), unread_count: z.number().int(), next_cursor: z.string().nullable() })
  .openapi('InboxList')

/** `{ids}` of the inbox state routes. */
export const InboxIds = z.object({ ids: z.array(z.string().min(1).max(100)).min(1).max(1000) }).openapi('InboxIds')

/** The longest snooze. */
export const MAX_SNOOZE_MS = 90 * 86_400_000

/** `POST /v1/inbox/snooze` body. */
export const InboxSnoozeIn = z
  .object({
    ids: InboxIds.shape.ids,
    until: z.iso.datetime({ offset: true }).openapi({ description: 'ISO 8601, in the future and at most 90 days ahead', example: '2026-12-02T09:00:00Z' }),
  })
  .openapi('InboxSnoozeIn')

/** `{topic?, tags?, app_id?, read?}` of the bulk routes; empty or absent selects every message. */
export const InboxFilterIn = z
  .object({
    topic: Topic.optional(),
    tags: z.array(Tag).max(20).optional().openapi({ description: 'messages with any of these tags' }),
    app_id: AppId.optional(),
    read: z.boolean().optional().openapi({ description: 'only read (true) or unread (false) messages' }),
  })
  .openapi('InboxFilter')

/** `{updated: n}` of the inbox state routes. */
export const InboxUpdated = z.object({ updated: z.number().int() }).openapi('InboxUpdated')

/** `{unread_count}`. */
export const UnreadCount = z.object({ unread_count: z.number().int() }).openapi('UnreadCount')

/** `GET /v1/inbox/counts` query. */
export const InboxCountsQuery = z.object({
  tags: TagList.optional().openapi({ param: { name: 'tags', in: 'query' }, description: 'Tabs to count, comma-separated', type: 'string' }),
  topic: Topic.optional().openapi({ param: { name: 'topic', in: 'query' } }),
  app_id: AppId.optional().openapi({ param: { name: 'app_id', in: 'query' } }),
})

const Counts = z.object({ unread_count: z.number().int(), unseen_count: z.number().int(), total: z.number().int() })

/** `GET /v1/inbox/counts` answer. */
export const InboxCountsOut = Counts.extend({ by_tag: z.record(z.string(), Counts) }).openapi('InboxCounts')

/** A validated inbox list query. */
export type InboxQueryInput = z.infer<typeof InboxQuery>
/** A validated bulk filter. */
export type InboxFilterInput = z.infer<typeof InboxFilterIn>
/** The answer of GET /v1/inbox. */
export type InboxListJson = z.infer<typeof InboxList>
/** The answer of GET /v1/inbox/counts. */
export type InboxCountsJson = z.infer<typeof InboxCountsOut>
