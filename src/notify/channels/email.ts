import { createRequire } from 'node:module'
import type { Transporter } from 'nodemailer'
import type SMTPPool from 'nodemailer/lib/smtp-pool/index.js'
import type { Store } from '../../store/index.js'
import type { ClaimedDelivery, DeliveryStatus } from '../../store/deliveries.js'
import type { ChannelResult, ChannelSender, DispatchObserver } from '../../delivery/channel.js'
import type { Clock, Rng } from '../../lib/clock.js'
import type { Log } from '../../log.js'
import { parseJsonOr } from '../../lib/json.js'
import { AppError } from '../../errors.js'
import type { DeliveryPayload } from '../pipeline.js'
import { deadWith, readPayload, retryOrDead } from './common.js'
import { maxAttemptsFor, nextRetryAt } from '../../delivery/retry-policy.js'
import { loadMarkdown } from '../markdown-lazy.js'
import { MARKDOWN_TOO_DEEP, markdownTooDeep } from '../markdown-depth.js'
import { htmlToText } from '../html-text.js'
import { smtpFailure } from './smtp-errors.js'
import { rewriteLinks } from '../click-links.js'

/** Dependencies of the email channel. */
export interface EmailChannelDeps {
  store: Store
  clock: Clock
  rng: Rng
  log: Log
  schedule: readonly number[]
  smtpUrl: string | null
  from: string
  /** Counts the attempts of digest members that went out in another delivery's message. */
  observer?: DispatchObserver
  /** The tracked link that replaces a payload's action_url in its email, or null (click tracking). */
  trackedLink?: (payload: DeliveryPayload) => string | null
  /** Tests shrink the connection count and the time limits. */
  limits?: Partial<{ connections: number; queueWaitMs: number; exchangeMs: number }>
}

/** The email channel, with `close()` to release pooled SMTP connections. */
export interface EmailChannel extends ChannelSender {
  close(): void
}

/** One SMTP exchange's result, before a delivery's retry schedule is applied. */
type Exchange =
  | { kind: 'success' | 'rejected' | 'failed'; attempt: NonNullable<ChannelResult['attempt']> }
  | { kind: 'snooze'; at: number }

interface Waiting {
  delivery: ClaimedDelivery
  payload: DeliveryPayload
  resolve: (r: ChannelResult) => void
}

/** SMTP connections at once; more messages wait for a free one (never inside nodemailer's pool queue). */
const SMTP_CONNECTIONS = 5
/** nodemailer's per-phase limits (connect, greeting, socket inactivity). */
const SMTP_TIMEOUT_MS = 20_000
/** A message that waited this long for a connection is snoozed, unsent, with its attempt refunded. */
const QUEUE_WAIT_MS = 10_000
/** How long before a snoozed message is offered again. */
const SNOOZE_MS = 5_000
/** One whole SMTP exchange; past it the connections are closed and the message is retried. */
const EXCHANGE_MS = 60_000
/**
 * The channel's time limit, from which the dispatcher derives the lease (limit + margin): the
 * wait for a connection plus a whole exchange, so a slow server can never outlive the lease and
 * have the same email claimed and sent a second time (docs/delivery.md).
 */
const CHANNEL_TIMEOUT_MS = QUEUE_WAIT_MS + EXCHANGE_MS

/** The subject and text of a digest holding `titles`. */
export function digestMessage(titles: readonly string[]): { subject: string; text: string } {
  const subject = titles.length === 1 ? titles[0]! : `You have ${titles.length} notifications`
  return { subject, text: titles.map((t) => `• ${t}`).join('\n') + '\n' }
}

/**
 * The email channel over nodemailer. No address → dead `no_address`; no SMTP URL → dead
 * `channel_not_configured`; a 5xx reply → dead; a 4xx reply or a transport error → retry.
 * A digest group (same group_key) goes out as ONE message: the members claimed in the same
 * batch are collected for one event-loop turn, the still-pending ones are read from the store,
 * and those take the message's attempt as their own. Transport errors are logged with the
 * webhook channel's stable codes, and the transport's own message as the response (smtpFailure).
 */
export function createEmailChannel(deps: EmailChannelDeps): EmailChannel {
  const { store, clock, rng, log, schedule, from } = deps
  let transport: Transporter | null = null
  const getTransport = (): Transporter => {
    // Pooled: a burst of notification emails reuses a few connections instead of a handshake each.
    // Options given in the URL's query (e.g. ?tls.rejectUnauthorized=false) still win.
    // nodemailer (~14 MB) and marked are loaded with the first email: a server that sends none never
    // loads them (docs/performance.md).
    if (transport) return transport
    const require = createRequire(import.meta.url)
    const nodemailer = require('nodemailer') as typeof import('nodemailer')
    const shared = require('nodemailer/lib/shared/index.js') as typeof import('nodemailer/lib/shared/index.js')
    transport = nodemailer.createTransport({
      pool: true,
      maxConnections: connections,
      connectionTimeout: SMTP_TIMEOUT_MS,
      greetingTimeout: SMTP_TIMEOUT_MS,
      socketTimeout: SMTP_TIMEOUT_MS,
      ...shared.parseConnectionUrl(deps.smtpUrl!),
    } as SMTPPool.Options)
    return transport
  }
  const groups = new Map<string, Waiting[]>()
  const connections = deps.limits?.connections ?? SMTP_CONNECTIONS
  const queueWaitMs = deps.limits?.queueWaitMs ?? QUEUE_WAIT_MS
  const exchangeMs = deps.limits?.exchangeMs ?? EXCHANGE_MS
  const slots = createSlots(connections)

  /**
   * Sends one message: success, `rejected` (a 5xx reply, permanent), `failed` (a 4xx reply or a
   * transport error, before the retry schedule is applied) or a snooze (no connection came free).
   */
  const exchange = async (d: ClaimedDelivery, to: string, msg: { subject: string; text: string; html?: string }): Promise<Exchange> => {
    if (!(await slots.acquire(queueWaitMs))) return { kind: 'snooze', at: clock.now() + SNOOZE_MS }
    const started = clock.now()
    let deadline: NodeJS.Timeout | null = null
    try {
      // The delivery id as Message-ID: a copy sent again after a lost reply can be recognised.
      const sending = getTransport().sendMail({ from, to, messageId: `<${d.id}@postbox>`, ...msg })
      const expired = new Promise<never>((_, reject) => {
        deadline = setTimeout(() => {
          // nodemailer cannot cancel one message: closing the pool ends it (and the few others
          // in flight, which retry); a new pool opens on the next send.
          transport?.close()
          transport = null
          reject(Object.assign(new Error(`SMTP exchange exceeded ${exchangeMs} ms`), { code: 'ETIMEDOUT' }))
        }, exchangeMs)
      })
      const info = (await Promise.race([sending, expired])) as { response?: string }
      return { kind: 'success', attempt: { startedAt: started, durationMs: clock.now() - started, responseBody: info.response ?? null } }
    } catch (err) {
      const e = err as Error & { responseCode?: number }
      const attempt = { startedAt: started, durationMs: clock.now() - started, statusCode: e.responseCode ?? null, ...smtpFailure(e) }
      if (e.responseCode !== undefined && e.responseCode >= 500) return { kind: 'rejected', attempt }
      log.debug({ err, delivery: d.id }, 'email send failed; will retry')
      return { kind: 'failed', attempt }
    } finally {
      if (deadline) clearTimeout(deadline)
      slots.release()
    }
  }

  /** Sends one message and maps the SMTP result to the delivery's outcome. */
  const deliver = async (d: ClaimedDelivery, to: string, msg: { subject: string; text: string; html?: string }): Promise<ChannelResult> => {
    const sent = await exchange(d, to, msg)
    switch (sent.kind) {
      case 'snooze':
        return { outcome: sent }
      case 'success':
        return { outcome: { kind: 'success' }, attempt: sent.attempt }
      case 'rejected':
        return { outcome: { kind: 'dead' }, attempt: sent.attempt }
      case 'failed':
        return retryOrDead(d, schedule, clock.now(), rng, sent.attempt)
    }
  }

  const flushGroup = async (key: string): Promise<void> => {
    const claimed = groups.get(key) ?? []
    groups.delete(key)
    const first = claimed[0]!
    const claimedIds = new Set(claimed.map((w) => w.delivery.id))
    // The members still pending go into this message, so hold them out of reach of claims until
    // it is sent: otherwise a claim during the SMTP exchange would send them a second time.
    const pending = await store.tx(async (s) => {
      const now = clock.now()
      const rows = (await s.deliveries.pendingInGroup(key, now)).filter((d) => !claimedIds.has(d.id))
      await s.deliveries.holdPending(rows.map((d) => d.id), now + CHANNEL_TIMEOUT_MS, now)
      return rows
    })
    const titles = [
      ...claimed.map((w) => ({ id: w.delivery.id, title: w.payload.title })),
      ...pending.map((d) => ({ id: d.id, title: parseJsonOr<{ title?: string }>(d.payload, {}).title ?? d.eventType })),
    ]
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map((t) => t.title)
    const sent = await exchange(first.delivery, first.payload.recipient.email!, digestMessage(titles))
    const now = clock.now()
    if (sent.kind === 'snooze') {
      // Nothing was sent: the held members become due with the claimed ones.
      await store.deliveries.holdPending(pending.map((d) => d.id), sent.at, now)
      for (const w of claimed) w.resolve({ outcome: sent })
      return
    }
    const a = sent.attempt
    let o: { kind: 'success' } | { kind: 'dead' } | { kind: 'retry'; at: number }
    if (sent.kind === 'failed') {
      // A transient failure: the group retries together, at the next step of its least-advanced
      // member, and each member is judged by its own attempt count, so the carrier's last
      // attempt ends only the carrier (a carried member counts this message as its next attempt).
      const fewest = Math.min(...claimed.map((w) => w.delivery.attempts), ...pending.map((d) => d.attempts + 1))
      o = { kind: 'retry', at: nextRetryAt(now, schedule, fewest, rng) ?? now }
    } else o = { kind: sent.kind === 'success' ? 'success' : 'dead' }
    // Each member carried by this message gets the attempt too (docs/delivery.md: each attempt is kept),
    // naming the delivery whose message it went out in.
    const carried = { ...a, responseBody: `sent in the message of ${first.delivery.id}${a.responseBody ? `: ${a.responseBody}` : ''}` }
    const ended = await store.tx(async (s) => {
      const statuses: (DeliveryStatus | null)[] = []
      for (const d of pending) statuses.push(await s.deliveries.carryGroupMember(d.id, o, carried, now))
      return statuses
    })
    for (const status of ended) if (status !== null) deps.observer?.attempt('email', status === 'dead' ? 'dead' : o.kind, a.durationMs)
    const spent = maxAttemptsFor(schedule)
    for (const w of claimed) w.resolve({ outcome: o.kind === 'retry' && w.delivery.attempts >= spent ? { kind: 'dead' } : o, attempt: a })
  }

  return {
    timeoutMs: CHANNEL_TIMEOUT_MS,
    // Two per connection: one sending, one ready. More would only wait for a connection while
    // holding dispatcher slots that inbox and webhook rows need.
    maxInFlight: 2 * connections,
    async send(delivery, signal) {
      // A sender must resolve: what throws below (a renderer, a link rewrite, the transport's
      // setup) is a failed attempt that follows the retry schedule, not the dispatcher's fallback.
      try {
        return await sendOne(delivery, signal)
      } catch (err) {
        log.error({ err, delivery: delivery.id }, 'email send threw; retrying on the schedule')
        return retryOrDead(delivery, schedule, clock.now(), rng, { startedAt: clock.now(), durationMs: 0, error: 'internal' })
      }
    },
    close() {
      transport?.close()
      transport = null
    },
  }

  /** One delivery: a digest member joins its group's message; any other is rendered and sent alone. */
  async function sendOne(delivery: ClaimedDelivery, signal: AbortSignal): Promise<ChannelResult> {
    const now = clock.now()
    if (signal.aborted) return { outcome: { kind: 'release' } }
    const payload = readPayload(delivery)
    if (!payload) return deadWith('invalid_payload', now)
    if (!payload.recipient.email) return deadWith('no_address', now)
    if (!deps.smtpUrl) return deadWith('channel_not_configured', now)
    if (delivery.groupKey) {
      const key = delivery.groupKey
      return new Promise<ChannelResult>((resolve) => {
        let list = groups.get(key)
        if (!list) {
          groups.set(key, (list = []))
          setImmediate(() => {
            const members = groups.get(key)!
            flushGroup(key).catch((err: Error) => {
              // A store failure while grouping: every claimed member retries; nothing is lost.
              log.error({ err }, 'digest send failed')
              const t = clock.now()
              for (const w of members) w.resolve(retryOrDead(w.delivery, schedule, t, rng, { startedAt: t, durationMs: 0, error: err.message }))
            })
          })
        }
        list.push({ delivery, payload, resolve })
      })
    }
    // A body nested too deep to render (its data made it so) can never be sent: dead, with a clear code.
    if (payload.format === 'markdown' && markdownTooDeep(payload.body) !== null) return deadWith(MARKDOWN_TOO_DEEP, now)
    let html: string | undefined
    try {
      html = payload.format === 'html' ? payload.body : payload.format === 'markdown' ? (await loadMarkdown())(payload.body) : undefined
    } catch (err) {
      if (err instanceof AppError && err.code === MARKDOWN_TOO_DEEP) return deadWith(MARKDOWN_TOO_DEEP, now)
      throw err
    }
    // An HTML template's text part is its words; markdown and text are readable as written.
    let text = payload.format === 'html' ? htmlToText(payload.body) : payload.body
    const tracked = deps.trackedLink?.(payload) ?? null
    if (tracked !== null && payload.action_url !== null) {
      text = rewriteLinks(text, payload.action_url, tracked)
      if (html !== undefined) html = rewriteLinks(html, payload.action_url, tracked, true)
    }
    return deliver(delivery, payload.recipient.email, { subject: payload.title, text, ...(html ? { html } : {}) })
  }
}

/** A counting semaphore whose `acquire` gives up after `waitMs` (false: no slot was taken). */
function createSlots(size: number) {
  let free = size
  const waiting: ((ok: boolean) => void)[] = []
  return {
    acquire(waitMs: number): Promise<boolean> {
      if (free > 0) {
        free--
        return Promise.resolve(true)
      }
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          waiting.splice(waiting.indexOf(take), 1)
          resolve(false)
        }, waitMs)
        const take = (ok: boolean): void => {
          clearTimeout(timer)
          resolve(ok)
        }
        waiting.push(take)
      })
    },
    release(): void {
      const next = waiting.shift()
      if (next) next(true)
      else free++
    },
  }
}
