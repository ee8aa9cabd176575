import type { Store } from '../store/index.js'
import type { Channel, NewDelivery } from '../store/deliveries.js'
import type { PreferenceRow, TemplateRow } from '../store/directory.js'
import type { Config } from '../config.js'
import type { Clock } from '../lib/clock.js'
import type { Log } from '../log.js'
import type { DispatchObserver } from '../delivery/channel.js'
import { newId } from '../lib/ids.js'
import { isUniqueViolation } from '../errors.js'
import { maxAttemptsFor } from '../delivery/retry-policy.js'
import { resolveRecipients, type Recipient } from './recipients.js'
import { decideChannel, type ChannelDecision, type NotifyChannel } from './preferences.js'
import { isValidTimeZone, planSend } from './schedule.js'
import { chooseTemplate, createRenderer, dependsOnRecipient, type RenderContext, type Rendered, type Renderer } from './render.js'
import { createBudgetedRender } from './render-budget.js'
import { encodePayload, type DeliveryPayload, type StoredPayload } from './delivery-payload.js'
import type { InboxStreamHub } from './inbox-stream.js'
import type { Suppression } from '../store/receipts.js'
import { sendWarnings, type NotifyWarning } from './channel-warnings.js'
import { publishInboxEvents, writeInboxMessages, type InboxWrite, type WrittenInbox } from './inbox-write.js'

/** The accepted request of POST /v1/notifications (docs/notifications-basics.md), after validation and defaults. */
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
  tags: string[]
  app_id: string
}

/** The answer to a send: 202 `{id, deduplicated, recipients, deliveries}`, and `warnings` when there are any. */
export interface SendResult {
  id: string
  deduplicated: boolean
  recipients: number
  deliveries: number
  warnings?: NotifyWarning[]
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
  /** The live SSE streams the inbox messages written at accept are pushed to after commit. */
  hub: InboxStreamHub
  /** Counts the inbox deliveries written at accept, as the dispatcher counts the attempts it settles. */
  observer?: DispatchObserver
  /** Tests replace the renderer and the timer of the render budget (default `performance.now`). */
  rendering?: RenderingDeps
}

/** What renders a notification's templates, and the monotonic milliseconds its budget is counted in. */
export interface RenderingDeps {
  render?: Renderer
  now?: () => number
}

/** What the accept transaction hands to the after-commit step. */
interface Accepted {
  result: SendResult
  /** Stream events of the inbox messages written, per user. */
  written: WrittenInbox | null
  /** Inbox deliveries written as delivered, and how long writing their messages took. */
  delivered: number
  durationMs: number
}

/**
 * Builds `send`: one transaction per notification (IMMEDIATE on SQLite) covering dedup, recipients,
 * preferences, schedule, rendering and one delivery per (notification, recipient, channel).
 * The inbox is written in that transaction too (docs/notifications-basics.md: it is written at once): each inbox
 * delivery is inserted already delivered with its message, unread counter and stream ids, so no
 * claim or settle ever touches it; after commit the messages go to the live streams. Email and
 * webhook deliveries are enqueued for the dispatcher.
 *
 * Each delivery row is one awaited store call, one after another: on SQLite the call has run
 * when it returns (the await costs a resolved promise beside the row's insert), and a PostgreSQL
 * transaction is one connection that would run overlapped calls in turn anyway.
 */
export function createPipeline(deps: PipelineDeps): (req: NotificationRequest) => Promise<SendResult> {
  const { store, config, clock, log, hub, observer } = deps
  const render = deps.rendering?.render ?? createRenderer()
  const timer = deps.rendering?.now ?? (() => performance.now())
  const maxAttempts = maxAttemptsFor(config.notificationRetrySchedule)

  const accept = (req: NotificationRequest): Promise<Accepted> =>
    store.tx(async (s) => {
      const now = clock.now()
      if (req.dedup_key !== null) {
        const prior = await s.notifications.byDedupKey(req.app_id, req.dedup_key)
        if (prior) {
          const result = { id: prior.id, deduplicated: true, recipients: prior.recipients, deliveries: prior.deliveries }
          return { result, written: null, delivered: 0, durationMs: 0 }
        }
      }
      const id = newId('ntf', now)
      const recipients = await resolveRecipients(req.recipients, req.topic, s.directory)
      const templates = new Map<NotifyChannel, TemplateRow[]>()
      for (const ch of req.channels) templates.set(ch, await s.directory.activeTemplates(req.topic, ch))
      const prefsOf = await s.directory.preferencesForTopic(req.topic, recipients.map((r) => r.id))
      const cache = fanoutCache(req, createBudgetedRender({ render, timer, log, topic: req.topic, audience: recipients.length }), templates, config.mandatoryTopics)
      // Every row of the fan-out is gathered first and written with one call per kind, so that
      // PostgreSQL takes a few statements for 1,000 recipients instead of one round trip each.
      const inboxRows: NewDelivery[] = []
      const inboxPayloads: InboxWrite['payload'][] = []
      const queued: NewDelivery[] = []
      const suppressed: Suppression[] = []
      for (const [i, r] of recipients.entries()) {
        const prefs = prefsOf(r.id)
        for (const channel of req.channels) {
          if (r.kind === 'external' && channel !== 'email') continue
          const decision = cache.decide(prefs, r.id, channel)
          if (!decision.enabled) {
            suppressed.push({ recipient: r.id, channel: queueChannel(channel), reason: 'preference_disabled' })
            continue
          }
          // The inbox is never delayed (planSend's first rule), so its plan needs no time zone.
          const plan =
            channel === 'inbox' ? null : planSend({ now, channel, severity: req.severity, ...decision, tz: pickZone(r, decision.quietHours?.tz) })
          const ch = queueChannel(channel)
          const { json, rendered } = cache.payload(r, channel, i + 1)
          const row = {
            // Ids taken in recipient order: the notification's deliveries list as its recipients do.
            id: newId('dlv', now),
            channel: ch,
            notificationId: id,
            recipient: r.id,
            eventType: req.topic,
            payload: json,
            groupKey: plan === null || plan.windowEnd === null ? null : `${r.id}|${ch}|${plan.windowEnd}`,
            maxAttempts,
            nextAttemptAt: plan === null ? now : plan.at,
            // The notification's application (docs/notifications.md, "Applications and user tokens").
            appId: req.app_id,
          }
          if (channel === 'inbox') {
            inboxRows.push(row)
            inboxPayloads.push(inboxPayload(req, id, r, rendered))
            continue
          }
          // The email still goes to the queue and dies there (its delivery says why); the
          // suppression records at accept what the operator's view answers with.
          if (channel === 'email') {
            const reason = r.email === null ? 'no_address' : config.smtpUrl === null ? 'channel_not_configured' : row.groupKey !== null ? 'digested' : null
            if (reason !== null) suppressed.push({ recipient: r.id, channel: ch, reason })
          }
          queued.push(row)
        }
      }
      const inbox: InboxWrite[] = []
      ;(await s.deliveries.insertDeliveredMany(inboxRows, now)).forEach((d, k) => {
        if (d.created) inbox.push({ deliveryId: d.id, payload: inboxPayloads[k]! })
      })
      const deliveries = inbox.length + (await s.deliveries.enqueueMany(queued, now)).filter((d) => d.created).length
      await s.receipts.suppress(id, suppressed, now)
      // The inbox deliveries' one attempt each: writing their messages (as the sender logs it).
      const started = clock.now()
      const written = await writeInboxMessages(s, inbox, started)
      const durationMs = clock.now() - started
      await s.deliveries.logDelivered(inbox.map((w) => w.deliveryId), { startedAt: started, durationMs })
      await s.notifications.insert({
        id,
        appId: req.app_id,
        topic: req.topic,
        tags: req.tags,
        dedupKey: req.dedup_key,
        request: JSON.stringify(req),
        recipients: recipients.length,
        deliveries,
        createdAt: now,
      })
      const result = { id, deduplicated: false, recipients: recipients.length, deliveries }
      return { result, written, delivered: inbox.length, durationMs }
    })

  return async (req) => {
    const a = await accept(req).catch((err: unknown) => {
      // Two sends of one new dedup_key at once (PostgreSQL, read committed): the later insert
      // meets the unique index and rolls back; run again, it finds the first as its repeat.
      if (req.dedup_key !== null && isUniqueViolation(err)) return accept(req)
      throw err
    })
    if (a.written !== null) publishInboxEvents(hub, a.written)
    if (observer) for (let i = 0; i < a.delivered; i++) observer.attempt('inbox', 'success', a.durationMs)
    const warnings = sendWarnings(req.channels, config)
    return warnings.length > 0 ? { ...a.result, warnings } : a.result
  }
}

/** A delivery's payload as stored (without the row's own fields) for one recipient. */
function storedPayload(req: NotificationRequest, r: Recipient, rendered: Rendered): StoredPayload {
  return {
    title: rendered.title,
    body: rendered.body,
    format: rendered.format,
    severity: req.severity,
    action_url: req.action_url,
    payload: req.payload,
    tags: req.tags,
    app_id: req.app_id,
    recipient: { email: r.email, name: r.user?.name ?? null, locale: r.user?.locale ?? null, external: r.kind === 'external' },
  }
}

/** The inbox message's content for one recipient: what the sender reads back (decodePayload) from the stored payload and its row. */
function inboxPayload(req: NotificationRequest, notificationId: string, r: Recipient, rendered: Rendered): DeliveryPayload {
  const stored = storedPayload(req, r, rendered)
  return { ...stored, notification_id: notificationId, topic: req.topic, recipient: { id: r.id, ...stored.recipient } }
}

/**
 * Per-notification memo of what a fan-out would otherwise redo for every recipient: the
 * preference decision of users without rows of their own, the template per (channel, locale),
 * the rendering of a template that does not look at the recipient, and the stored payload of a
 * recipient with no details (a bare user id). Each is exactly what the uncached call returns,
 * except that all renders share the notification's render budget (render-budget.ts).
 */
function fanoutCache(
  req: NotificationRequest,
  render: ReturnType<typeof createBudgetedRender>,
  templates: ReadonlyMap<NotifyChannel, TemplateRow[]>,
  mandatoryTopics: readonly string[],
) {
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
    /** The stored payload of a delivery to the `position`th recipient, and the rendering it holds. */
    payload(r: Recipient, channel: NotifyChannel, position: number): { json: string; rendered: Rendered } {
      const locale = r.user?.locale ?? null
      const key = `${channel}|${locale ?? ''}`
      let template = chosen.get(key)
      if (template === undefined) chosen.set(key, (template = chooseTemplate(templates.get(channel)!, locale)))
      let rendered: Rendered
      if (dependsOnRecipient(template)) rendered = render(template, context(req, r), position)
      else {
        rendered = renders.get(template) ?? render(template, context(req, r), position)
        renders.set(template, rendered)
      }
      const plain = r.email === null && (r.user?.name ?? null) === null && locale === null && r.kind !== 'external'
      const cached = plain ? bare.get(rendered) : undefined
      if (cached !== undefined) return { json: cached, rendered }
      const json = encodePayload(storedPayload(req, r, rendered))
      if (plain) bare.set(rendered, json)
      return { json, rendered }
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
