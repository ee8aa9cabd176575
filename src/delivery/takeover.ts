import type { Clock } from '../lib/clock.js'
import type { Log } from '../log.js'
import type { Store } from '../store/index.js'
import { isOrphanedClaim } from './claim-owner.js'
import type { EndpointLimits } from './endpoint-limits.js'

/**
 * The repairs a dispatcher runs when it takes the dispatcher lock. Both are safe with other
 * processes alive: a row waiting for its ordering key's turn with nothing older left (the
 * schema's trigger should leave none) becomes due; in-flight rows claimed by a process of this
 * PID namespace that is gone are offered again now instead of after their leases (timeout +
 * 30 s), the attempt spent staying spent as docs/delivery.md says. Rows of a process that may be alive
 * wait for their leases: releasing them would send them a second time while they are in flight.
 */
export function repairOnTakeover(store: Store, clock: Clock, log: Log): void {
  try {
    const woken = store.deliveries.releaseWaitingInOrder(clock.now())
    if (woken > 0) log.warn({ woken }, 'released deliveries left waiting for their ordering key')
  } catch (err) {
    log.error({ err }, 'releasing waiting deliveries failed')
  }
  try {
    const released = store.deliveries.releaseOrphanedClaims(clock.now(), isOrphanedClaim)
    if (released > 0) log.info({ released }, 'released claims of a previous process')
  } catch (err) {
    log.error({ err }, 'releasing orphaned claims failed')
  }
}

/**
 * Counts the rows other processes still have in flight (the previous holder draining after it
 * handed the lock over) against their endpoints' limits. `count()` runs at takeover and, while
 * any are left (`active`), at every lock check, offering again those of a process that died.
 */
export function createForeignCounts(deps: { store: Store; limits: EndpointLimits; owner: string; clock: Clock; log: Log }) {
  const { store, limits, owner, clock, log } = deps
  let active = false
  return {
    /** True while the last count found rows of other processes in flight. */
    get active(): boolean {
      return active
    },
    /** Recounts them into the endpoint limits. */
    count(): void {
      try {
        if (active) store.deliveries.releaseOrphanedClaims(clock.now(), isOrphanedClaim)
        const counts = store.deliveries.inFlightByOthers(owner, clock.now())
        limits.setForeign(counts)
        active = counts.size > 0
      } catch (err) {
        log.error({ err }, 'counting the rows other processes have in flight failed')
      }
    },
  }
}
