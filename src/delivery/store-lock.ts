import type { Clock } from '../lib/clock.js'
import { systemClock } from '../lib/clock.js'
import type { Log } from '../log.js'
import type { Store } from '../store/index.js'
import { CLAIM_OWNER, isOrphanedClaim } from './claim-owner.js'
import type { Lock } from './lock.js'

/** What `createStoreLock` takes besides the store; tests inject the owner and the liveness check. */
export interface StoreLockOptions {
  /** This holder's name; default `<pid>.<process start>.`, the prefix of this process's claim tokens. */
  owner?: string
  /** True when `owner` names a process that no longer runs; default `isOrphanedClaim`. */
  isGone?: (owner: string) => boolean
  clock?: Clock
  log?: Log
}

/**
 * The lock every dispatcher takes by default: a row in the file's `locks` table, so one process
 * at a time claims deliveries from a file. Another process on the same file (an overlapping
 * deploy, a second server by mistake) serves its API and enqueues, and takes over when the
 * holder releases at stop or its process is gone. So `max_concurrency`, `rate_limit`, ordering
 * and the breaker are applied by one process, never doubled. All dispatchers of one process
 * share the owner, so several Postbox instances in one process all claim, as they did before.
 */
export function createStoreLock(store: Store, opts: StoreLockOptions = {}): Lock {
  const owner = opts.owner ?? CLAIM_OWNER
  const isGone = opts.isGone ?? ((holder: string) => isOrphanedClaim(holder))
  const clock = opts.clock ?? systemClock
  let waitingFor: string | null = null
  return {
    async acquire(name) {
      const { holder, replaced } = store.locks.take(name, owner, clock.now(), isGone)
      if (holder !== owner) {
        if (waitingFor !== holder) opts.log?.info({ lock: name, holder }, 'another process holds the dispatcher lock; this one serves the API and stands by')
        waitingFor = holder
        return false
      }
      if (replaced !== null) opts.log?.info({ lock: name, previous: replaced }, 'took over the dispatcher lock of a process that is gone')
      else if (waitingFor !== null) opts.log?.info({ lock: name }, 'dispatcher lock taken; delivering')
      waitingFor = null
      return true
    },
    async release(name) {
      store.locks.release(name, owner)
    },
  }
}
