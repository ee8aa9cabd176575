import type { lookup as dnsLookup } from 'node:dns'
import type { Config } from '../config.js'
import type { Clock, Rng } from '../lib/clock.js'
import type { Log } from '../log.js'
import type { Store } from '../store/index.js'
import type { ClaimedDelivery } from '../store/deliveries.js'
import { requestIdOf } from '../store/requests.js'
import type { ChannelResult, ChannelSender } from './channel.js'
import { classifyResponse, classifyTransportError, type Classification } from './classify.js'
import { lazyGuardedAgent } from './guarded-agent.js'
import { createInFlightExchanges, startExchange } from './http-exchange.js'
import { transportErrorText } from './http-util.js'
import { createOriginHealth, type OriginHealth } from './origin-health.js'
import { nextRetryAt } from './retry-policy.js'
import { signStandard } from './signer.js'
import { packageVersion } from './version.js'

/** The longest timeout a request may ask for; the claim's lease covers each request's own. */
export const MAX_REQUEST_TIMEOUT_MS = 60_000

/** What `createRequestSender` needs. */
export interface RequestSenderDeps {
  store: Store
  config: Config
  clock: Clock
  rng: Rng
  log: Log
  /** Version for `user-agent: Postbox/<version>`; defaults to package.json's. */
  version?: string
  /** The DNS resolver behind the SSRF guard; defaults to `dns.lookup` (tests inject one). */
  resolve?: typeof dnsLookup
}

/** The `request` ChannelSender, its origin breakers, and `close()` for its connection pool. */
export interface RequestSender extends ChannelSender {
  readonly origins: OriginHealth
  close(): Promise<void>
}

/**
 * Creates the sender of durable HTTP requests (docs/requests.md): the stored method, URL, headers
 * and body, byte for byte on every attempt, through the same SSRF-pinned connect, exchange (16 KiB
 * response cap, time limit, no redirects), classification and retry schedule as webhooks. A
 * per-origin breaker (origin-health.ts) pauses a failing host's requests, and only those.
 */
export function createRequestSender(deps: RequestSenderDeps): RequestSender {
  const { store, config, clock, rng, log } = deps
  const userAgent = `Postbox/${deps.version ?? packageVersion()}`
  const agent = lazyGuardedAgent(config.allowNetworks, deps.resolve)
  const origins = createOriginHealth()
  // Shutdown aborts every in-flight exchange through the dispatcher's signal.
  const inFlight = createInFlightExchanges()

  /** Applies the attempt to the origin's breaker; the time its requests wait until, if paused. */
  const recordHealth = async (key: string, cls: Classification, now: number): Promise<number | null> => {
    if (cls.kind === 'success') {
      origins.recordSuccess(key)
      return null
    }
    if (cls.kind === 'dead' && cls.error === 'destination_not_allowed') return null
    const r = origins.recordFailure(key, cls.kind === 'retry' && cls.breakerFailure, now)
    if (r.opened && r.pausedUntil !== null) {
      // Its queued rows wait with it, so claims do not read past them during the pause.
      const until = r.pausedUntil
      const deferred = await store.tx((s) => s.deliveries.deferPendingForEndpoint(key, until, now))
      log.warn({ origin: key.slice(1), until: new Date(r.pausedUntil).toISOString(), deferred }, 'request origin circuit opened')
    }
    return r.pausedUntil
  }

  async function send(d: ClaimedDelivery, signal: AbortSignal): Promise<ChannelResult> {
    if (signal.aborted) return { outcome: { kind: 'release' } }
    const startedAt = clock.now()
    const t = await store.requests.target(d.id)
    if (t === null) return { outcome: { kind: 'dead' }, attempt: { startedAt, durationMs: 0, error: 'request_missing' } }
    const t0 = performance.now()
    const url = new URL(t.url)
    const requestId = requestIdOf(d.id)
    const headers: string[] = []
    let contentType: string | null = t.bodyJson ? 'application/json' : null
    for (const [k, v] of Object.entries(t.headers)) {
      const lower = k.toLowerCase()
      if (lower === 'content-type') contentType ??= v
      else headers.push(lower, v)
    }
    if (t.body !== null) headers.push('content-type', contentType ?? 'text/plain; charset=utf-8')
    headers.push('user-agent', userAgent, 'postbox-request-id', requestId, 'postbox-attempt', String(d.attempts))
    if (t.signingSecret !== null) {
      const ts = Math.floor(startedAt / 1000)
      headers.push('webhook-id', requestId, 'webhook-timestamp', String(ts), 'webhook-signature', signStandard(t.signingSecret, requestId, ts, t.body ?? ''))
    }

    const r = await inFlight.run(startExchange(agent.get(), { origin: url.origin, path: url.pathname + url.search, method: t.method, headers, body: t.body, timeoutMs: t.timeoutMs }), signal)

    if (r.aborted) {
      // As for webhooks: before the request was written, refund; after it, keep the attempt.
      if (!r.requestSent) return { outcome: { kind: 'release' } }
      return { outcome: { kind: 'retry', at: clock.now() }, attempt: { startedAt, durationMs: performance.now() - t0, error: 'aborted' } }
    }
    const cls = r.statusCode !== null ? classifyResponse(r.statusCode, r.retryAfter, clock.now()) : classifyTransportError(r.timedOut ? 'timeout' : transportErrorText(r.error))
    const now = clock.now()
    let pausedUntil: number | null = null
    const key = d.targetKey ?? `@${url.origin}`
    try {
      pausedUntil = await recordHealth(key, cls, now)
    } catch (err) {
      log.warn({ err, origin: url.origin }, 'request origin health not recorded')
    }
    let outcome: ChannelResult['outcome']
    if (cls.kind === 'success') outcome = { kind: 'success' }
    else if (cls.kind === 'dead') outcome = { kind: 'dead' }
    else {
      const at = nextRetryAt(now, t.retrySchedule ?? config.retrySchedule, d.attempts, rng, cls.retryAfterMs)
      outcome = at === null ? { kind: 'dead' } : { kind: 'retry', at: pausedUntil !== null && at < pausedUntil ? pausedUntil : at }
    }
    return {
      outcome,
      attempt: { startedAt, durationMs: performance.now() - t0, statusCode: r.statusCode, error: cls.kind === 'success' ? null : cls.error, responseBody: r.body },
    }
  }

  return {
    timeoutMs: config.requestTimeoutMs,
    origins,
    slotsFor: (key, now) => origins.slots(key, now),
    send,
    close: () => agent.close(500),
  }
}
