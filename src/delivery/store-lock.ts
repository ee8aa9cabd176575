import { readlinkSync } from 'node:fs'
import type { Clock } from '../lib/clock.js'
import { systemClock } from '../lib/clock.js'
import type { Log } from '../log.js'
import type { Store } from '../store/index.js'
import type { LockRow } from '../store/locks.js'
import { CLAIM_OWNER, isOrphanedClaim } from './claim-owner.js'
import type { Lock } from './lock.js'

/** How often a holder refreshes its heartbeat (it asks for the lock at least this often). */
export const LOCK_BEAT_MS = 5_000
/** A holder in another PID namespace without a heartbeat for this long is taken over. */
export const LOCK_STALE_MS = 30_000

/** This process's PID namespace (Linux: the inode of /proc/self/ns/pid); '0' where there is none. */
function pidNamespace(): string {
  try {
    return /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? '0'
  } catch {
    return '0'
  }
}

/** This process as a lock owner: `<pid>.<process start>.n<pid namespace>.`. */
export const LOCK_OWNER = `${CLAIM_OWNER}n${pidNamespace()}.`

const OWNER = /^\d{1,10}\.\d{1,20}\.n(\d{1,20})\.$/

/**
 * True when the holder of `row` is gone. In this PID namespace its PID says so (not running, or
 * running a process started at another time). In another namespace (two containers on one
 * volume, or this container after a restart) its PID means nothing here, so only a heartbeat
 * older than LOCK_STALE_MS does.
 */
export function lockHolderGone(row: LockRow, now: number, owner = LOCK_OWNER, orphaned: (token: string) => boolean = isOrphanedClaim): boolean {
  const theirs = OWNER.exec(row.owner)?.[1]
  const ours = OWNER.exec(owner)?.[1]
  if (theirs !== undefined && theirs !== ours) return now - row.seenAt > LOCK_STALE_MS
  return orphaned(row.owner)
}

// Dispatchers of one process share its owner, so the row is deleted only when the last of
// them on a file releases it; otherwise closing one would hand the lock to another process
// while the others still claim.
const holders = new Map<string, number>()

/** What `createStoreLock` takes besides the store; tests inject the owner and the liveness check. */
export interface StoreLockOptions {
  /** This holder's name; default LOCK_OWNER. */
  owner?: string
  /** True when the holder of a row no longer runs; default `lockHolderGone`. */
  isGone?: (row: LockRow, now: number) => boolean
  clock?: Clock
  log?: Log
}

/**
 * The lock every dispatcher takes by default: a row in the file's `locks` table, so one process
 * at a time claims deliveries from a file. Another process on the same file (an overlapping
 * deploy, a second server by mistake, a second container on the volume) serves its API and
 * enqueues, and takes over when the holder releases at stop or is gone. So `max_concurrency`,
 * `rate_limit`, ordering and the breaker are applied by one process, never doubled. All
 * dispatchers of one process share the owner, so several Postbox instances in one process all
 * claim. The holder must ask again at least every LOCK_BEAT_MS (its heartbeat).
 */
export function createStoreLock(store: Store, opts: StoreLockOptions = {}): Lock {
  const owner = opts.owner ?? LOCK_OWNER
  const isGone = opts.isGone ?? ((row: LockRow, now: number) => lockHolderGone(row, now, owner))
  const clock = opts.clock ?? systemClock
  const mine = new Set<string>()
  const key = (name: string): string => `${store.path}\0${owner}\0${name}`
  let waitingFor: string | null = null
  return {
    async acquire(name) {
      const now = clock.now()
      const { holder, replaced } = store.locks.take(name, owner, now, (row) => isGone(row, now), LOCK_BEAT_MS)
      if (holder !== owner) {
        if (waitingFor !== holder) opts.log?.info({ lock: name, holder }, 'another process holds the dispatcher lock; this one serves the API and stands by')
        waitingFor = holder
        return false
      }
      if (replaced !== null) opts.log?.info({ lock: name, previous: replaced }, 'took over the dispatcher lock of a process that is gone')
      else if (waitingFor !== null) opts.log?.info({ lock: name }, 'dispatcher lock taken; delivering')
      waitingFor = null
      if (!mine.has(name)) {
        mine.add(name)
        holders.set(key(name), (holders.get(key(name)) ?? 0) + 1)
      }
      return true
    },
    async release(name) {
      if (!mine.delete(name)) return
      const left = (holders.get(key(name)) ?? 1) - 1
      if (left > 0) return void holders.set(key(name), left)
      holders.delete(key(name))
      store.locks.release(name, owner)
    },
  }
}
