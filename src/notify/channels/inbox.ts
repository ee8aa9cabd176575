import type { Store } from '../../store/index.js'
import type { ClaimedDelivery } from '../../store/deliveries.js'
import type { NewInboxMessage, StreamEvent } from '../../store/inbox.js'
import type { ChannelResult, ChannelSender } from '../../delivery/channel.js'
import type { Clock, Rng } from '../../lib/clock.js'
import type { Log } from '../../log.js'
import type { InboxStreamHub } from '../inbox-stream.js'
import { deadWith, readPayload, retryOrDead } from './common.js'

/** Dependencies of the inbox channel. */
export interface InboxChannelDeps {
  store: Store
  hub: InboxStreamHub
  clock: Clock
  rng: Rng
  log: Log
  schedule: readonly number[]
}

interface Waiting {
  delivery: ClaimedDelivery
  message: NewInboxMessage
  resolve: (r: ChannelResult) => void
}

/**
 * The inbox channel: writes the message (idempotent on the delivery id), then pushes its
 * stream events to the user's live streams after commit. Group commit: every inbox send
 * started in the same event-loop turn is written in one transaction, which is what makes a
 * 1,000-recipient fan-out one fsync instead of a thousand.
 */
export function createInboxChannel(deps: InboxChannelDeps): ChannelSender {
  const { store, hub, clock, rng, log, schedule } = deps
  let batch: Waiting[] = []

  const flush = (): void => {
    const items = batch
    batch = []
    const started = clock.now()
    let written: Map<string, StreamEvent[]>
    try {
      written = store.tx(() => store.inbox.insertMessages(items.map((w) => w.message), started))
    } catch (err) {
      log.warn({ err, n: items.length }, 'inbox write failed')
      const now = clock.now()
      const attempt = { startedAt: started, durationMs: now - started, error: (err as Error).message }
      for (const w of items) w.resolve(retryOrDead(w.delivery, schedule, now, rng, attempt))
      return
    }
    const durationMs = clock.now() - started
    for (const [userId, events] of written) hub.publish(userId, events)
    for (const w of items) w.resolve({ outcome: { kind: 'success' }, attempt: { startedAt: started, durationMs } })
  }

  return {
    timeoutMs: 5_000,
    send(delivery, signal) {
      if (signal.aborted) return Promise.resolve({ outcome: { kind: 'release' } })
      const p = readPayload(delivery)
      if (!p) return Promise.resolve(deadWith('invalid_payload', clock.now()))
      if (p.recipient.external) return Promise.resolve(deadWith('no_inbox', clock.now()))
      const message: NewInboxMessage = {
        userId: p.recipient.id,
        notificationId: p.notification_id,
        deliveryId: delivery.id,
        topic: p.topic,
        title: p.title,
        body: p.body,
        severity: p.severity,
        actionUrl: p.action_url,
        payload: p.payload,
      }
      return new Promise<ChannelResult>((resolve) => {
        if (batch.length === 0) setImmediate(flush)
        batch.push({ delivery, message, resolve })
      })
    },
  }
}
