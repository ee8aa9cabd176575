import diagnostics from 'node:diagnostics_channel'
import type { lookup as dnsLookup } from 'node:dns'
import { Agent, buildConnector } from 'undici'
import type { Config } from '../config.js'
import type { Clock, Rng } from '../lib/clock.js'
import type { Log } from '../log.js'
import type { Store } from '../store/index.js'
import type { ClaimedDelivery } from '../store/deliveries.js'
import type { EndpointRow } from '../store/endpoints.js'
import type { ChannelResult, ChannelSender } from './channel.js'
import { classifyResponse, classifyTransportError, type Classification } from './classify.js'
import { createAddressPolicy, DestinationNotAllowedError, guardedLookup, literalIp } from './ssrf.js'
import { signatureHeaders } from './signer.js'
import { abortable, readBodyCapped, transportErrorCode } from './http-util.js'
import { createHealthRecorder, type EndpointDisabledHandler } from './health.js'
import { nextRetryAt } from './retry-policy.js'
import { createEndpointCache } from './endpoint-cache.js'
import { packageVersion } from './version.js'

export type { EndpointDisabledHandler } from './health.js'

/** What `createWebhookSender` needs. */
export interface WebhookSenderDeps {
  store: Store
  config: Config
  clock: Clock
  rng: Rng
  log: Log
  /**
   * Called INSIDE the transaction that disabled an endpoint (410 → `gone`, or auto-disable →
   * `failing`), after its pending deliveries were killed. Publish `postbox.endpoint.disabled`
   * here; throwing rolls the disable back (it is retried on the next failure).
   */
  onEndpointDisabled?: EndpointDisabledHandler
  /** Version for `user-agent: Postbox/<version>`; defaults to package.json's. */
  version?: string
  /** The DNS resolver behind the SSRF guard; defaults to `dns.lookup` (tests inject one). */
  resolve?: typeof dnsLookup
}

/** The webhook ChannelSender, plus `close()` for its connection pool. */
export interface WebhookSender extends ChannelSender {
  /** Closes the pooled keep-alive connections. */
  close(): Promise<void>
}

/** How long close() lets pooled requests finish before destroying the sockets. */
const CLOSE_GRACE_MS = 500
const SEND_HEADERS = diagnostics.channel('undici:client:sendHeaders')
const DELIVERY_HEADER = /\r\npostbox-delivery-id: ([^\r\n]+)/i

/**
 * Creates the webhook sender: one undici Agent (keep-alive pools per origin) whose connect step
 * resolves the host through the SSRF guard and connects to the checked address; signed
 * requests per SPEC §3; never follows redirects; reads at most 16 KiB of every response.
 */
export function createWebhookSender(deps: WebhookSenderDeps): WebhookSender {
  const { store, config, clock, rng, log } = deps
  const userAgent = `Postbox/${deps.version ?? packageVersion()}`
  const policy = createAddressPolicy(config.allowNetworks)
  const baseConnect = buildConnector({ lookup: guardedLookup(policy, deps.resolve), timeout: 10_000 } as buildConnector.BuildOptions)
  const connect: buildConnector.connector = (opts, cb) => {
    const ip = literalIp(opts.hostname)
    if (ip !== null && !policy.isAllowed(ip)) return cb(new DestinationNotAllowedError(ip), null)
    return baseConnect(opts, cb)
  }
  const agent = new Agent({ connect, keepAliveTimeout: 30_000, keepAliveMaxTimeout: 120_000, pipelining: 1 })
  const health = createHealthRecorder({ store, config, log, onEndpointDisabled: deps.onEndpointDisabled })

  // Which in-flight deliveries have had their request head written: an abort before that point
  // releases the claim (refund); after it, the receiver may have the request, so it is kept.
  const headSent = new Map<string, boolean>()
  const onHead = (msg: unknown): void => {
    const m = DELIVERY_HEADER.exec((msg as { headers?: string }).headers ?? '')
    if (m && headSent.has(m[1]!)) headSent.set(m[1]!, true)
  }
  SEND_HEADERS.subscribe(onHead)

  const endpoint = createEndpointCache(store)

  const outcomeFor = (cls: Classification, d: ClaimedDelivery, ep: EndpointRow, now: number): ChannelResult['outcome'] => {
    if (cls.kind === 'success') return { kind: 'success' }
    if (cls.kind === 'dead') return { kind: 'dead' }
    const at = nextRetryAt(now, ep.retrySchedule ?? config.retrySchedule, d.attempts, rng, cls.retryAfterMs)
    return at === null ? { kind: 'dead' } : { kind: 'retry', at }
  }

  async function send(d: ClaimedDelivery, signal: AbortSignal): Promise<ChannelResult> {
    if (signal.aborted) return { outcome: { kind: 'release' } }
    const startedAt = clock.now()
    const ep = d.endpointId === null ? null : endpoint(d.endpointId)
    const body = d.eventId === null ? null : store.events.body(d.eventId)
    if (ep === null || ep.deletedAt !== null || ep.disabled || body === null) {
      const error = ep?.disabled ? 'endpoint_disabled' : body === null && ep ? 'event_missing' : 'endpoint_deleted'
      return { outcome: { kind: 'dead' }, attempt: { startedAt, durationMs: 0, error } }
    }
    const t0 = performance.now()
    const ts = Math.floor(startedAt / 1000)
    const previous = ep.previousSecrets.filter((p) => p.expiresAt > startedAt).map((p) => p.secret)
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(ep.headers)) headers[k.toLowerCase()] = v
    Object.assign(headers, {
      'content-type': 'application/json',
      'user-agent': userAgent,
      'webhook-id': d.eventId!,
      'webhook-timestamp': String(ts),
      ...signatureHeaders({ mode: ep.signature, secret: ep.secret, previous }, d.eventId!, ts, body),
      'postbox-event-type': d.eventType,
      'postbox-delivery-id': d.id,
      'postbox-attempt': String(d.attempts),
    })
    const url = new URL(ep.url)
    const ac = new AbortController()
    const onAbort = (): void => ac.abort(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    const timer = setTimeout(() => ac.abort(new Error('timeout')), ep.timeoutMs)
    headSent.set(d.id, false)
    let cls: Classification
    let statusCode: number | null = null
    let responseBody: string | null = null
    let error: string | null = null
    try {
      const res = await abortable(
        agent.request({ origin: url.origin, path: url.pathname + url.search, method: ep.method, headers, body, signal: ac.signal }),
        ac.signal,
      )
      statusCode = res.statusCode
      responseBody = await readBodyCapped(res.body, res.headers['content-length'])
      const retryAfter = res.headers['retry-after']
      cls = classifyResponse(res.statusCode, Array.isArray(retryAfter) ? retryAfter[0]! : (retryAfter ?? null), clock.now())
    } catch (err) {
      if (signal.aborted) {
        const sent = headSent.get(d.id) === true
        if (!sent) return { outcome: { kind: 'release' } }
        const attempt = { startedAt, durationMs: performance.now() - t0, error: 'aborted' }
        return { outcome: { kind: 'retry', at: clock.now() }, attempt }
      }
      const code = ac.signal.aborted ? 'timeout' : transportErrorCode(err)
      cls = classifyTransportError(code)
    } finally {
      clearTimeout(timer)
      signal.removeEventListener('abort', onAbort)
      headSent.delete(d.id)
    }
    if (cls.kind !== 'success') error = cls.error
    const now = clock.now()
    let outcome = outcomeFor(cls, d, ep, now)
    // Health is bookkeeping: if the database refuses the write (locked, full), the request still
    // happened and its outcome stands; turning a 200 into a failure would send it again.
    let h = { disabled: false }
    try {
      h = health.record(ep, cls, now)
    } catch (err) {
      log.warn({ err, endpoint: ep.id }, 'endpoint health not recorded')
    }
    if (h.disabled && outcome.kind === 'retry') {
      outcome = { kind: 'dead' }
      error = 'endpoint_disabled'
    }
    return {
      outcome,
      attempt: { startedAt, durationMs: performance.now() - t0, statusCode, error, responseBody },
      health: { success: cls.kind === 'success', breakerFailure: cls.kind === 'retry' && cls.breakerFailure, disable: cls.kind === 'dead' ? cls.disable : null },
    }
  }

  return {
    timeoutMs: config.requestTimeoutMs,
    send,
    async close() {
      SEND_HEADERS.unsubscribe(onHead)
      // A connect still in progress (stop() already settled its row) must not hold the close.
      let timer: NodeJS.Timeout | undefined
      const graceful = await Promise.race([
        agent.close().then(() => true),
        new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), CLOSE_GRACE_MS))),
      ])
      clearTimeout(timer)
      if (!graceful) await agent.destroy()
    },
  }
}
