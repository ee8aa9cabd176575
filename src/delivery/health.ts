import type { Config } from '../config.js'
import type { Log } from '../log.js'
import type { Store } from '../store/index.js'
import type { EndpointRow } from '../store/endpoints.js'
import type { Classification } from './classify.js'
import { pauseAfterFailure, shouldAutoDisable, type BreakerPolicy } from './breaker.js'

/** Why an endpoint was disabled automatically. */
export type DisableReason = 'gone' | 'failing'

/**
 * Called inside the disabling transaction with that transaction's store `s` (use `s` only);
 * publishes `postbox.endpoint.disabled`. Throwing or rejecting rolls the disable back.
 */
export type EndpointDisabledHandler = (s: Store, endpoint: { id: string; url: string; appId?: string }, reason: DisableReason) => void | Promise<void>

/** Error recorded on deliveries killed by a disable. */
export const ENDPOINT_DISABLED = 'endpoint_disabled'

/** A successful attempt writes last_success_at at most this often per healthy endpoint. */
const SUCCESS_WRITE_INTERVAL_MS = 1000

/** The endpoint's breaker settings over the global ones. */
export function breakerPolicy(ep: Pick<EndpointRow, 'breakerThreshold' | 'breakerPauseMs' | 'breakerMaxPauseMs'>, config: Config): BreakerPolicy {
  const pauseMs = ep.breakerPauseMs ?? config.breakerPauseMs
  return {
    threshold: ep.breakerThreshold ?? config.breakerThreshold,
    pauseMs,
    maxPauseMs: Math.max(pauseMs, ep.breakerMaxPauseMs ?? config.breakerMaxPauseMs),
  }
}

/**
 * Applies one attempt's result to its endpoint's health (docs/delivery.md, "Circuit breaker"):
 * a success resets the counters, closes the breaker and releases the rows its pause held; a
 * failure counts (breaker failures also enter the breaker's window), opens the breaker when the
 * failure rate says the endpoint is down, and disables the endpoint on 410 or after
 * `disableAfterMs` of failing.
 */
export function createHealthRecorder(deps: {
  store: Store
  config: Config
  log: Log
  onEndpointDisabled?: EndpointDisabledHandler | undefined
}) {
  const { store, config, log } = deps
  // Healthy endpoints and when their last_success_at was written: a steady stream of successes
  // costs one write per second per endpoint instead of one per delivery.
  const healthySince = new Map<string, number>()

  const disable = async (ep: EndpointRow, reason: DisableReason, now: number): Promise<boolean> => {
    try {
      return await store.tx(async (s) => {
        if (!(await s.endpoints.disable(ep.id, reason, now))) return false
        const killed = await s.deliveries.killPendingForEndpoint(ep.id, ENDPOINT_DISABLED, now)
        await deps.onEndpointDisabled?.(s, { id: ep.id, url: ep.url, appId: ep.appId }, reason)
        log.warn({ endpoint: ep.id, reason, killed }, 'endpoint disabled')
        return true
      })
    } catch (err) {
      log.error({ err, endpoint: ep.id }, 'failed to disable endpoint')
      return false
    }
  }

  return {
    /**
     * Records the attempt; `disabled` is true when this attempt disabled the endpoint, and
     * `pausedUntil` is set while its breaker is open (a retry should not be due before then).
     */
    async record(ep: EndpointRow, cls: Classification, now: number): Promise<{ disabled: boolean; pausedUntil?: number }> {
      if (cls.kind === 'success') {
        const last = healthySince.get(ep.id)
        if (last === undefined || now - last >= SUCCESS_WRITE_INTERVAL_MS || now < last) {
          // A steady endpoint's slot is taken before the write, so the sends that finish while it
          // runs do not all write too (on PostgreSQL they queued on the endpoint's row lock).
          if (last !== undefined) healthySince.set(ep.id, now)
          const r = await store.tx(async (s) => {
            const r = await s.endpoints.recordSuccess(ep.id, now)
            // One truth: the breaker is closed, so nothing may stay parked behind its pause.
            const released = r.pausedUntil === null ? 0 : await s.deliveries.releaseHeldForEndpoint(ep.id, r.pausedUntil, now)
            return { ...r, released }
          })
          if (r.steady) healthySince.set(ep.id, now)
          else healthySince.delete(ep.id)
          if (r.pausedUntil !== null && r.pausedUntil > now) log.info({ endpoint: ep.id, released: r.released }, 'endpoint circuit closed by a success')
        }
        return { disabled: false }
      }
      if (cls.kind === 'dead' && cls.error === 'destination_not_allowed') return { disabled: false }
      healthySince.delete(ep.id)
      const breakerFailure = cls.kind === 'retry' && cls.breakerFailure
      const h = await store.endpoints.recordFailure(ep.id, breakerFailure, now)
      if (h === null) return { disabled: false }
      if (cls.kind === 'dead' && cls.disable === 'gone') return { disabled: await disable(ep, 'gone', now) }
      if (shouldAutoDisable(h, now, config.disableAfterMs)) return { disabled: await disable(ep, 'failing', now) }
      if (breakerFailure) {
        const until = pauseAfterFailure(h, now, breakerPolicy(h, config))
        if (until === null) return h.pausedUntil !== null && h.pausedUntil > now ? { disabled: false, pausedUntil: h.pausedUntil } : { disabled: false }
        // Its queued rows wait with it: otherwise every claim during the pause would read past
        // all of them (an outage does not burn attempts, nor slow other endpoints).
        const deferred = await store.tx(async (s) => {
          await s.endpoints.pause(ep.id, until)
          return s.deliveries.deferPendingForEndpoint(ep.id, until, now)
        })
        log.warn({ endpoint: ep.id, until: new Date(until).toISOString(), deferred }, 'endpoint circuit opened')
        return { disabled: false, pausedUntil: until }
      }
      return { disabled: false }
    },
  }
}
