import type { Config } from '../config.js'
import type { Log } from '../log.js'
import type { Store } from '../store/index.js'
import type { EndpointRow } from '../store/endpoints.js'
import type { Classification } from './classify.js'
import { pauseAfterFailure, shouldAutoDisable } from './breaker.js'

/** Why an endpoint was disabled automatically. */
export type DisableReason = 'gone' | 'failing'

/** Called inside the disabling transaction; publishes `postbox.endpoint.disabled`. */
export type EndpointDisabledHandler = (endpoint: { id: string; url: string; appId?: string }, reason: DisableReason) => void

/** Error recorded on deliveries killed by a disable. */
export const ENDPOINT_DISABLED = 'endpoint_disabled'

/** A successful attempt writes last_success_at at most this often per healthy endpoint. */
const SUCCESS_WRITE_INTERVAL_MS = 1000

/**
 * Applies one attempt's result to its endpoint's health (SPEC §5): success resets the counters,
 * a failure counts (breaker failures separately), opens the breaker after 5 in a row, and
 * disables the endpoint on 410 or after `disableAfterMs` of failing.
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

  const disable = (ep: EndpointRow, reason: DisableReason, now: number): boolean => {
    try {
      return store.tx(() => {
        if (!store.endpoints.disable(ep.id, reason, now)) return false
        const killed = store.deliveries.killPendingForEndpoint(ep.id, ENDPOINT_DISABLED, now)
        deps.onEndpointDisabled?.({ id: ep.id, url: ep.url, appId: ep.appId }, reason)
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
    record(ep: EndpointRow, cls: Classification, now: number): { disabled: boolean; pausedUntil?: number } {
      if (cls.kind === 'success') {
        const last = healthySince.get(ep.id)
        if (last === undefined || now - last >= SUCCESS_WRITE_INTERVAL_MS || now < last) {
          store.endpoints.recordSuccess(ep.id, now)
          healthySince.set(ep.id, now)
        }
        return { disabled: false }
      }
      if (cls.kind === 'dead' && cls.error === 'destination_not_allowed') return { disabled: false }
      healthySince.delete(ep.id)
      const breakerFailure = cls.kind === 'retry' && cls.breakerFailure
      const h = store.endpoints.recordFailure(ep.id, breakerFailure, now)
      if (h === null) return { disabled: false }
      if (cls.kind === 'dead' && cls.disable === 'gone') return { disabled: disable(ep, 'gone', now) }
      if (shouldAutoDisable(h, now, config.disableAfterMs)) return { disabled: disable(ep, 'failing', now) }
      if (breakerFailure) {
        const until = pauseAfterFailure(h, now)
        if (until === null) return h.pausedUntil !== null && h.pausedUntil > now ? { disabled: false, pausedUntil: h.pausedUntil } : { disabled: false }
        // Its queued rows wait with it: otherwise every claim during the pause would read past
        // all of them (SPEC §5: an outage does not burn attempts, nor slow other endpoints).
        const deferred = store.tx(() => {
          store.endpoints.pause(ep.id, until)
          return store.deliveries.deferPendingForEndpoint(ep.id, until, now)
        })
        log.warn({ endpoint: ep.id, until: new Date(until).toISOString(), deferred }, 'endpoint circuit opened')
        return { disabled: false, pausedUntil: until }
      }
      return { disabled: false }
    },
  }
}
