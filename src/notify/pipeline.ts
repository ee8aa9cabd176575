import type { Store } from '../store/index.js'
import type { Channel } from '../store/deliveries.js'
import type { TemplateRow } from '../store/directory.js'
import type { Config } from '../config.js'
import type { Clock } from '../lib/clock.js'
import { newId } from '../lib/ids.js'
import { maxAttemptsFor } from '../delivery/retry-policy.js'
import { resolveRecipients, type Recipient } from './recipients.js'
import { decideChannel, type NotifyChannel } from './preferences.js'
import { isValidTimeZone, planSend } from './schedule.js'
import { chooseTemplate, createRenderer, type RenderContext } from './render.js'

/** The accepted request of POST /v1/notifications (SPEC §7), after validation and defaults. */
export interface NotificationRequest {
  topic: string
  recipients: string[]
  title: string | null
  body: string | null
  payload: Record<string, unknown>
  severity: 'info' | 'warning' | 'critical'
  action_url: string | null
  channels: NotifyChannel[]
  dedup_key: string | null
}

/** The answer to a send: 202 `{id, deduplicated, recipients, deliveries}`. */
export interface SendResult {
  id: string
  deduplicated: boolean
  recipients: number
  deliveries: number
}

/** The JSON a notification delivery carries: everything its channel needs to send it. */
export interface DeliveryPayload {
  notification_id: string
  topic: string
  title: string
  body: string
  format: 'text' | 'markdown' | 'html'
  severity: string
  action_url: string | null
  payload: Record<string, unknown>
  recipient: { id: string; email: string | null; name: string | null; locale: string | null; external: boolean }
}

/** The queue's channel name for an API channel name. */
export function queueChannel(channel: NotifyChannel): Channel {
  return channel === 'webhook' ? 'notify-webhook' : channel
}

/** The API's channel name for a queue channel name. */
export function apiChannel(channel: Channel): string {
  return channel === 'notify-webhook' ? 'webhook' : channel
}

/** Dependencies of the pipeline. */
export interface PipelineDeps {
  store: Store
  config: Config
  clock: Clock
}

/**
 * Builds `send`: one IMMEDIATE transaction per notification covering dedup, recipients,
 * preferences, schedule, rendering and one delivery per (notification, recipient, channel).
 */
export function createPipeline(deps: PipelineDeps): (req: NotificationRequest) => SendResult {
  const { store, config, clock } = deps
  const render = createRenderer()
  const maxAttempts = maxAttemptsFor(config.notificationRetrySchedule)

  return (req) =>
    store.tx(() => {
      const now = clock.now()
      if (req.dedup_key !== null) {
        const prior = store.notifications.byDedupKey(req.dedup_key)
        if (prior) return { id: prior.id, deduplicated: true, recipients: prior.recipients, deliveries: prior.deliveries }
      }
      const id = newId('ntf', now)
      const recipients = resolveRecipients(req.recipients, req.topic, store.directory)
      const templates = new Map<NotifyChannel, TemplateRow[]>()
      for (const ch of req.channels) templates.set(ch, store.directory.activeTemplates(req.topic, ch))
      const prefsOf = store.directory.preferencesForTopic(req.topic)
      let deliveries = 0
      for (const r of recipients) {
        const prefs = prefsOf(r.id)
        for (const channel of req.channels) {
          if (r.kind === 'external' && channel !== 'email') continue
          const decision = decideChannel(prefs, r.id, req.topic, channel, config.mandatoryTopics)
          if (!decision.enabled) continue
          const tz = pickZone(r, decision.quietHours?.tz)
          const plan = planSend({ now, channel, severity: req.severity, ...decision, tz })
          const locale = r.user?.locale ?? null
          const rendered = render(chooseTemplate(templates.get(channel)!, locale), context(req, r))
          const payload: DeliveryPayload = {
            notification_id: id,
            topic: req.topic,
            title: rendered.title,
            body: rendered.body,
            format: rendered.format,
            severity: req.severity,
            action_url: req.action_url,
            payload: req.payload,
            recipient: { id: r.id, email: r.email, name: r.user?.name ?? null, locale, external: r.kind === 'external' },
          }
          const ch = queueChannel(channel)
          const { created } = store.deliveries.enqueue(
            {
              channel: ch,
              dedupKey: `${id}:${r.id}:${ch}`,
              notificationId: id,
              recipient: r.id,
              eventType: req.topic,
              payload: JSON.stringify(payload),
              groupKey: plan.windowEnd === null ? null : `${r.id}|${ch}|${plan.windowEnd}`,
              maxAttempts,
              nextAttemptAt: plan.at,
            },
            now,
          )
          if (created) deliveries++
        }
      }
      store.notifications.insert({
        id,
        topic: req.topic,
        dedupKey: req.dedup_key,
        request: JSON.stringify(req),
        recipients: recipients.length,
        deliveries,
        createdAt: now,
      })
      return { id, deduplicated: false, recipients: recipients.length, deliveries }
    })
}

function pickZone(r: Recipient, quietZone: string | undefined): string {
  for (const tz of [r.user?.timezone, quietZone]) if (tz && isValidTimeZone(tz)) return tz
  return 'UTC'
}

function context(req: NotificationRequest, r: Recipient): RenderContext {
  return {
    topic: req.topic,
    title: req.title,
    body: req.body,
    severity: req.severity,
    action_url: req.action_url,
    payload: req.payload,
    recipient: { id: r.id, name: r.user?.name ?? null, email: r.email, locale: r.user?.locale ?? null },
  }
}
