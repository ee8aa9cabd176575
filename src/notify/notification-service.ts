import type { z } from '@hono/zod-openapi'
import type { Store } from '../store/index.js'
import type { NotificationRow } from '../store/notifications.js'
import type { ReceiptRow } from '../store/receipts.js'
import { toIso } from '../lib/clock.js'
import { parseJsonOr } from '../lib/json.js'
import { decodeIdCursor, encodeCursor, pageSize, type Page } from '../lib/cursor.js'
import { errors } from '../errors.js'
import type { SendResult } from './pipeline.js'
import type { NotificationRequest } from './pipeline.js'
import type { NotificationInput, NotificationOut, NotificationSummary } from './schemas.js'
import { selectorError } from './recipients.js'

/**
 * At most this many deliveries (and receipts) are embedded in `GET /v1/notifications/:id` (a
 * role of 10,000 users on two channels has 20,000); `delivery_counts` covers them all, and `GET
 * /v1/deliveries?notification_id=` pages through them.
 */
export const NOTIFICATION_DELIVERIES_SHOWN = 1000

type NotificationJson = z.infer<typeof NotificationOut>
type SummaryJson = z.infer<typeof NotificationSummary>

/** `GET /v1/notifications` filters (ISO times for since/until). */
export interface NotificationListQuery {
  topic?: string
  app_id?: string
  user_id?: string
  since?: string
  until?: string
  limit?: number
  cursor?: string | null
}

/** Sending notifications and the operator's view of them. */
export interface NotificationService {
  send(input: NotificationInput): Promise<SendResult>
  get(id: string): Promise<NotificationJson>
  list(query: NotificationListQuery): Promise<Page<SummaryJson>>
}

/** What the notification service needs. */
export interface NotificationServiceDeps {
  store: Store
  /** The accept transaction (pipeline.ts). */
  accept: (req: NotificationRequest) => Promise<SendResult>
  /** Rejects with 404 unless `appId` names an application. */
  requireApp: (appId: string) => Promise<void>
}

const summaryJson = (n: NotificationRow): SummaryJson => ({
  id: n.id,
  app_id: n.appId,
  topic: n.topic,
  tags: n.tags,
  dedup_key: n.dedupKey,
  recipients: n.recipients,
  deliveries: n.deliveries,
  created_at: toIso(n.createdAt),
})

/** A receipt's JSON: a suppression wins over the delivery's own status (its delivery may still run, e.g. a digest). */
const receiptJson = (r: ReceiptRow): NotificationJson['receipts'][number] => ({
  recipient: r.recipient,
  channel: r.channel as 'inbox' | 'email' | 'notify-webhook',
  delivery_id: r.deliveryId,
  status: r.reason !== null ? 'suppressed' : r.status,
  reason: r.reason ?? (r.status === 'dead' ? r.lastError : null),
  delivered_at: r.status === 'success' ? toIso(r.completedAt) : null,
  seen_at: toIso(r.seenAt),
  read_at: toIso(r.readAt),
  clicked_at: toIso(r.clickedAt),
  archived_at: toIso(r.archivedAt),
})

const timeOf = (iso: string | undefined, field: string): number | null => {
  if (iso === undefined) return null
  const t = Date.parse(iso)
  if (Number.isNaN(t)) throw errors.validation([{ field, message: 'must be an ISO 8601 time', in: 'query' }])
  return t
}

/** Builds the notification service. */
export function createNotificationService(deps: NotificationServiceDeps): NotificationService {
  const { store, accept, requireApp } = deps
  return {
    async send(input) {
      const recipients = input.recipients ?? ['subscribers']
      const issues = recipients.flatMap((r, i) => {
        const message = selectorError(r)
        return message === null ? [] : [{ field: `recipients.${i}`, message, in: 'body' }]
      })
      if (input.data !== undefined && input.payload !== undefined && JSON.stringify(input.data) !== JSON.stringify(input.payload)) {
        issues.push({ field: 'data', message: 'is the same as payload: give one of them', in: 'body' })
      }
      if (issues.length > 0) throw errors.validation(issues.slice(0, 50))
      const appId = input.app_id ?? 'default'
      await requireApp(appId)
      return accept({
        topic: input.topic,
        recipients,
        title: input.title ?? null,
        body: input.body ?? null,
        payload: input.data ?? input.payload ?? {},
        severity: input.severity ?? 'info',
        action_url: input.action_url ?? null,
        channels: [...new Set(input.channels ?? (['inbox'] as const))],
        dedup_key: input.dedup_key ?? null,
        tags: [...new Set(input.tags ?? [])],
        app_id: appId,
      })
    },
    async get(id) {
      // Four independent reads, issued together (on PostgreSQL they run at once on the pool).
      const [n, counts, receipts, deliveries] = await Promise.all([
        store.notifications.get(id),
        store.deliveries.countsByNotification(id),
        store.receipts.receipts(id, NOTIFICATION_DELIVERIES_SHOWN + 1),
        store.deliveries.byNotification(id, NOTIFICATION_DELIVERIES_SHOWN),
      ])
      if (!n) throw errors.notFound('Notification')
      const total = Object.values(counts).reduce((a, b) => a + b, 0)
      return {
        id: n.id,
        app_id: n.appId,
        topic: n.topic,
        tags: n.tags,
        dedup_key: n.dedupKey,
        recipients: n.recipients,
        created_at: toIso(n.createdAt),
        request: parseJsonOr<Record<string, unknown>>(n.request, {}),
        receipts: receipts.slice(0, NOTIFICATION_DELIVERIES_SHOWN).map(receiptJson),
        receipts_truncated: receipts.length > NOTIFICATION_DELIVERIES_SHOWN,
        delivery_counts: counts,
        deliveries_truncated: total > NOTIFICATION_DELIVERIES_SHOWN,
        deliveries: deliveries.map((d) => ({
          id: d.id,
          recipient: d.recipient ?? '',
          // The stored name, as GET /v1/deliveries shows it: `notify-webhook` for the webhook channel.
          channel: d.channel as 'inbox' | 'email' | 'notify-webhook',
          status: d.status,
          attempts: d.attempts,
          next_attempt_at: d.status === 'pending' ? toIso(d.nextAttemptAt) : null,
          last_error: d.lastError,
          completed_at: toIso(d.completedAt),
        })),
      }
    },
    async list(q) {
      if (q.app_id !== undefined) await requireApp(q.app_id)
      const limit = pageSize(q.limit)
      const after = q.cursor ? decodeIdCursor(q.cursor, 'ntf') : null
      if (q.cursor && after === null) throw errors.validation([{ field: 'cursor', message: 'is not a cursor returned by this list', in: 'query' }])
      const rows = await store.notifications.list({
        topic: q.topic ?? null,
        appId: q.app_id ?? null,
        userId: q.user_id ?? null,
        since: timeOf(q.since, 'since'),
        until: timeOf(q.until, 'until'),
        after,
        limit: limit + 1,
      })
      const more = rows.length > limit
      const data = (more ? rows.slice(0, limit) : rows).map(summaryJson)
      return { data, next_cursor: more ? encodeCursor(data[data.length - 1]!.id) : null }
    },
  }
}
