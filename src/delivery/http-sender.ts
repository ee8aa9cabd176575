import type { lookup as dnsLookup } from 'node:dns'
import type { Config } from '../config.js'
import type { Clock, Rng } from '../lib/clock.js'
import type { Log } from '../log.js'
import type { Store } from '../store/index.js'
import type { ClaimedDelivery } from '../store/deliveries.js'
import type { EndpointRow } from '../store/endpoints.js'
import type { ChannelResult, ChannelSender } from './channel.js'
import { classifyResponse, classifyTransportError, type Classification } from './classify.js'
import { lazyGuardedAgent } from './guarded-agent.js'
import { signatureHeaders } from './signer.js'
import { transportErrorText } from './http-util.js'
import { createInFlightExchanges, startExchange } from './http-exchange.js'
import { createTargetCache } from './http-target.js'
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
   * `failing`), after its pending deliveries were killed, with that transaction's store (use it
   * only). Publish `postbox.endpoint.disabled` here; throwing rolls the disable back (it is
   * retried on the next failure).
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
const NONE: readonly string[] = []

/**
 * Creates the webhook sender: one undici Agent (keep-alive pools per origin) whose connect step
 * resolves the host through the SSRF guard and connects to the checked address; signed
 * requests per docs/delivery.md; never follows redirects; reads at most 16 KiB of every response.
 */
export function createWebhookSender(deps: WebhookSenderDeps): WebhookSender {
  const { store, config, clock, rng, log } = deps
  const userAgent = `Postbox/${deps.version ?? packageVersion()}`
  // undici (~20 MB with its 110 files) is loaded with the first request: an idle server, or one
  // with no webhook endpoint, never loads it (docs/performance.md).
  const agent = lazyGuardedAgent(config.allowNetworks, deps.resolve)
  const health = createHealthRecorder({ store, config, log, onEndpointDisabled: deps.onEndpointDisabled })

  const endpoint = createEndpointCache(store)
  const target = createTargetCache()

  // Shutdown aborts every in-flight exchange through the dispatcher's signal.
  const inFlight = createInFlightExchanges()

  const outcomeFor = (cls: Classification, d: ClaimedDelivery, ep: EndpointRow, now: number): ChannelResult['outcome'] => {
    if (cls.kind === 'success') return { kind: 'success' }
    if (cls.kind === 'dead') return { kind: 'dead' }
    const at = nextRetryAt(now, ep.retrySchedule ?? config.retrySchedule, d.attempts, rng, cls.retryAfterMs)
    return at === null ? { kind: 'dead' } : { kind: 'retry', at }
  }

  async function send(d: ClaimedDelivery, signal: AbortSignal): Promise<ChannelResult> {
    if (signal.aborted) return { outcome: { kind: 'release' } }
    const startedAt = clock.now()
    // One version check per send, so a changed URL, secret or pause is seen at once.
    await endpoint.refresh()
    const ep = d.endpointId === null ? null : await endpoint.get(d.endpointId)
    const body = d.eventBody
    if (ep === null || ep.deletedAt !== null || ep.disabled || body === null) {
      const error = ep?.disabled ? 'endpoint_disabled' : body === null && ep ? 'event_missing' : 'endpoint_deleted'
      return { outcome: { kind: 'dead' }, attempt: { startedAt, durationMs: 0, error } }
    }
    const t0 = performance.now()
    const ts = Math.floor(startedAt / 1000)
    const previous = ep.previousSecrets.length === 0 ? NONE : ep.previousSecrets.filter((p) => p.expiresAt > startedAt).map((p) => p.secret)
    const t = target(ep)
    const headers = t.headers.slice()
    headers.push(
      'content-type', 'application/json',
      'user-agent', userAgent,
      'webhook-id', d.eventId!,
      'webhook-timestamp', String(ts),
    )
    const sig = signatureHeaders({ mode: ep.signature, secret: ep.secret, previous }, d.eventId!, ts, body)
    for (const k in sig) headers.push(k, sig[k]!)
    headers.push('postbox-event-type', d.eventType, 'postbox-delivery-id', d.id, 'postbox-attempt', String(d.attempts))

    const r = await inFlight.run(startExchange(agent.get(), { origin: t.origin, path: t.path, method: ep.method, headers, body, timeoutMs: ep.timeoutMs }), signal)

    let cls: Classification
    let error: string | null = null
    if (r.aborted) {
      // Before the request was written the receiver has nothing: release (refund the attempt).
      // After it, the receiver may have acted on it: keep the attempt and retry at once.
      if (!r.requestSent) return { outcome: { kind: 'release' } }
      const attempt = { startedAt, durationMs: performance.now() - t0, error: 'aborted' }
      return { outcome: { kind: 'retry', at: clock.now() }, attempt }
    }
    if (r.statusCode !== null) cls = classifyResponse(r.statusCode, r.retryAfter, clock.now())
    else cls = classifyTransportError(r.timedOut ? 'timeout' : transportErrorText(r.error))
    if (cls.kind !== 'success') error = cls.error
    const now = clock.now()
    let outcome = outcomeFor(cls, d, ep, now)
    // Health is bookkeeping: if the database refuses the write (locked, full), the request still
    // happened and its outcome stands; turning a 200 into a failure would send it again.
    let h: { disabled: boolean; pausedUntil?: number } = { disabled: false }
    try {
      h = await health.record(ep, cls, now)
    } catch (err) {
      log.warn({ err, endpoint: ep.id }, 'endpoint health not recorded')
    }
    if (h.disabled && outcome.kind === 'retry') {
      outcome = { kind: 'dead' }
      error = 'endpoint_disabled'
    }
    // A retry due inside the endpoint's pause waits for its end, with the rest of its queue.
    if (outcome.kind === 'retry' && h.pausedUntil !== undefined && outcome.at < h.pausedUntil) outcome = { kind: 'retry', at: h.pausedUntil }
    return {
      outcome,
      attempt: { startedAt, durationMs: performance.now() - t0, statusCode: r.statusCode, error, responseBody: r.body },
      health: { success: cls.kind === 'success', breakerFailure: cls.kind === 'retry' && cls.breakerFailure, disable: cls.kind === 'dead' ? cls.disable : null },
    }
  }

  return {
    timeoutMs: config.requestTimeoutMs,
    send,
    close: () => agent.close(CLOSE_GRACE_MS),
  }
}
