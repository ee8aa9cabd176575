import type { ChannelSender } from '../../delivery/channel.js'
import type { Clock, Rng } from '../../lib/clock.js'
import type { Log } from '../../log.js'
import { deadWith, readPayload, retryOrDead } from './common.js'

/**
 * Publishes an event to the webhook engine in application `appId` (the notification's, `default`
 * when absent); `id` makes a re-sent delivery publish the same event.
 */
export type PublishEvent = (type: string, data: Record<string, unknown>, id?: string, appId?: string) => Promise<void>

/** Dependencies of the notification webhook channel. */
export interface NotifyWebhookDeps {
  publishEvent: PublishEvent
  clock: Clock
  rng: Rng
  log: Log
  schedule: readonly number[]
}

/**
 * The notification webhook channel: publishes `notification.<topic>` holding the rendered
 * notification and its recipient. The webhook engine then fans it out to subscribed endpoints
 * with its own retries, so this channel only fails when publishing itself fails.
 */
export function createNotifyWebhookChannel(deps: NotifyWebhookDeps): ChannelSender {
  const { publishEvent, clock, rng, log, schedule } = deps
  return {
    timeoutMs: 5_000,
    async send(delivery) {
      const started = clock.now()
      const p = readPayload(delivery)
      if (!p) return deadWith('invalid_payload', started)
      const data = {
        notification_id: p.notification_id,
        topic: p.topic,
        title: p.title,
        body: p.body,
        format: p.format,
        severity: p.severity,
        action_url: p.action_url,
        payload: p.payload,
        recipient: { id: p.recipient.id, email: p.recipient.email, name: p.recipient.name, locale: p.recipient.locale },
      }
      try {
        // In the notification's own application: its endpoints, never another application's (docs/applications.md).
        await publishEvent(`notification.${p.topic}`, data, delivery.id, p.app_id ?? 'default')
        return { outcome: { kind: 'success' }, attempt: { startedAt: started, durationMs: clock.now() - started } }
      } catch (err) {
        log.warn({ err, delivery: delivery.id }, 'notification webhook publish failed')
        const now = clock.now()
        return retryOrDead(delivery, schedule, now, rng, { startedAt: started, durationMs: now - started, error: (err as Error).message })
      }
    },
  }
}
