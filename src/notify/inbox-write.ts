import type { Store } from '../store/index.js'
import type { NewInboxMessage, StreamEvent } from '../store/inbox.js'
import type { DeliveryPayload } from './delivery-payload.js'
import type { InboxStreamHub } from './inbox-stream.js'

/** One inbox delivery to write: its id and its (rendered) notification payload. */
export interface InboxWrite {
  deliveryId: string
  payload: DeliveryPayload
}

/** The stream events a write appended, per user: push them with `publishInboxEvents` once committed. */
export type WrittenInbox = Map<string, StreamEvent[]>

/**
 * Writes the inbox message of each delivery: the one place both inbox paths go through, the
 * accept transaction of POST /v1/notifications (rows written as delivered) and the inbox channel
 * sender (rows the dispatcher claimed: a redeliver, a recover, rows enqueued by older versions).
 * Idempotent per delivery id, with the unread counters and stream ids moved in the same
 * statements; runs inside the caller's transaction (given that transaction's store), or in its
 * own. External recipients have no inbox: callers never pass them.
 */
export function writeInboxMessages(s: Store, writes: readonly InboxWrite[], now: number): Promise<WrittenInbox> {
  const messages: NewInboxMessage[] = []
  for (const w of writes) {
    const p = w.payload
    messages.push({
      userId: p.recipient.id,
      notificationId: p.notification_id,
      deliveryId: w.deliveryId,
      appId: p.app_id ?? 'default',
      topic: p.topic,
      title: p.title,
      body: p.body,
      bodyFormat: p.format,
      tags: p.tags ?? [],
      severity: p.severity,
      actionUrl: p.action_url,
      payload: p.payload,
    })
  }
  return s.inbox.insertMessages(messages, now)
}

/** Pushes written messages to their users' live SSE streams; call only after the write committed. */
export function publishInboxEvents(hub: InboxStreamHub, written: WrittenInbox): void {
  for (const [userId, events] of written) hub.publish(userId, events)
}
