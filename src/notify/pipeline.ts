import type { Store } from '../store/index.js'
import type { Channel } from '../store/deliveries.js'
import type { PreferenceRow, TemplateRow } from '../store/directory.js'
import type { Config } from '../config.js'
import type { Clock } from '../lib/clock.js'
import type { Log } from '../log.js'
import { newId } from '../lib/ids.js'
import { maxAttemptsFor } from '../delivery/retry-policy.js'
import { resolveRecipients, type Recipient } from './recipients.js'
import { decideChannel, type ChannelDecision, type NotifyChannel } from './preferences.js'
import { isValidTimeZone, planSend } from './schedule.js'
import { chooseTemplate, createRenderer, dependsOnRecipient, type RenderContext, type Rendered } from './render.js'
import { encodePayload } from './delivery-payload.js'

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

export type { DeliveryPayload } from './delivery-payload.js'

/**
 * The queue's channel name for an API channel name. The webhook channel is stored as
 * `notify-webhook`, apart from the `webhook` rows that go to endpoints, and every view of a
 * delivery (GET /v1/deliveries, GET /v1/notifications/:id, metrics) shows that stored name.
 */
export function queueChannel(channel: NotifyChannel): Channel {
  return channel === 'webhook' ? 'notify-webhook' : channel
}

/** Dependencies of the pipeline. */
export interface PipelineDeps {
  store: Store
  config: Config
  clock: Clock
  /** Receives a warning when a template fails at render time. */
  log: Log
}

/**
 * Builds `send`: one IMMEDIATE transaction per notification covering dedup, recipients,
 * preferences, schedule, rendering and one delivery per (notification, recipient, channel).
 */
export function createPipeline(deps: PipelineDeps): (req: NotificationRequest) => SendResult {
  const { store, config, clock, log } = deps
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
      const prefsOf = store.directory.preferencesForTopic(req.topic, recipients.map((r) => r.id))
      const cache = fanoutCache(req, render, templates, config.mandatoryTopics, log)
      let deliveries = 0
      for (const r of recipients) {
        const prefs = prefsOf(r.id)
        for (const channel of req.channels) {
          if (r.kind === 'external' && channel !== 'email') continue
          const decision = cache.decide(prefs, r.id, channel)
          if (!decision.enabled) continue
          // The inbox is never delayed (planSend's first rule), so its plan needs no time zone.
          const plan =
            channel === 'inbox' ? null : planSend({ now, channel, severity: req.severity, ...decision, tz: pickZone(r, decision.quietHours?.tz) })
          const ch = queueChannel(channel)
          const { created } = store.deliveries.enqueue(
            {
              channel: ch,
              notificationId: id,
              recipient: r.id,
              eventType: req.topic,
              payload: cache.payload(r, channel),
              groupKey: plan === null || plan.windowEnd === null ? null : `${r.id}|${ch}|${plan.windowEnd}`,
              maxAttempts,
              nextAttemptAt: plan === null ? now : plan.at,
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

/**
 * Per-notification memo of what a fan-out would otherwise redo for every recipient: the
 * preference decision of users without rows of their own, the template per (channel, locale),
 * the rendering of a template that does not look at the recipient, and the stored payload of a
 * recipient with no details (a bare user id). Each is exactly what the uncached call returns.
 */
function fanoutCache(
  req: NotificationRequest,
  render: ReturnType<typeof createRenderer>,
  templates: ReadonlyMap<NotifyChannel, TemplateRow[]>,
  mandatoryTopics: readonly string[],
  log: Log,
) {
  const failed = new Set<number>()
  /** Renders, and logs a template's render failure once per notification (never the payload). */
  const renderLogged = (template: TemplateRow | null, r: Recipient): Rendered => {
    const rendered = render(template, context(req, r))
    if (rendered.error !== undefined && template !== null && !failed.has(template.id)) {
      failed.add(template.id)
      log.warn(
        { topic: req.topic, channel: template.channel, locale: template.locale, template_version: template.version, error: rendered.error },
        'notification template failed to render; sent the title and body as given',
      )
    }
    return rendered
  }
  const decisions = new Map<readonly PreferenceRow[], Map<NotifyChannel, ChannelDecision>>()
  const chosen = new Map<string, TemplateRow | null>()
  const renders = new Map<TemplateRow | null, Rendered>()
  const bare = new Map<Rendered, string>()
  return {
    decide(prefs: readonly PreferenceRow[], userId: string, channel: NotifyChannel): ChannelDecision {
      // Rows that name no user decide the same for everyone they apply to.
      if (!prefs.every((p) => p.userId === '*')) return decideChannel(prefs, userId, req.topic, channel, mandatoryTopics)
      let byChannel = decisions.get(prefs)
      if (!byChannel) decisions.set(prefs, (byChannel = new Map()))
      let d = byChannel.get(channel)
      if (!d) byChannel.set(channel, (d = decideChannel(prefs, userId, req.topic, channel, mandatoryTopics)))
      return d
    },
    payload(r: Recipient, channel: NotifyChannel): string {
      const locale = r.user?.locale ?? null
      const key = `${channel}|${locale ?? ''}`
      let template = chosen.get(key)
      if (template === undefined) chosen.set(key, (template = chooseTemplate(templates.get(channel)!, locale)))
      let rendered: Rendered
      if (dependsOnRecipient(template)) rendered = renderLogged(template, r)
      else {
        rendered = renders.get(template) ?? renderLogged(template, r)
        renders.set(template, rendered)
      }
      const name = r.user?.name ?? null
      const plain = r.email === null && name === null && locale === null && r.kind !== 'external'
      const cached = plain ? bare.get(rendered) : undefined
      if (cached !== undefined) return cached
      const json = encodePayload({
        title: rendered.title,
        body: rendered.body,
        format: rendered.format,
        severity: req.severity,
        action_url: req.action_url,
        payload: req.payload,
        recipient: { email: r.email, name, locale, external: r.kind === 'external' },
      })
      if (plain) bare.set(rendered, json)
      return json
    },
  }
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
