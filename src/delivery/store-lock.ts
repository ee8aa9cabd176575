import { realpathSync } from 'node:fs'
import type { Clock } from '../lib/clock.js'
import { systemClock } from '../lib/clock.js'
import type { Log } from '../log.js'
import type { Store } from '../store/index.js'
import type { LockRow } from '../store/locks.js'
import { CLAIM_OWNER, isOrphanedClaim, ownerNamespace } from './claim-owner.js'
import type { Lock } from './lock.js'

/** How often a holder refreshes its heartbeat while a standby waits (it asks at least this often). */
export const LOCK_BEAT_MS = 5_000
/** A holder in another PID namespace without a heartbeat for this long, while a standby waited as long, is taken over. */
export const LOCK_STALE_MS = 30_000
/** The row a waiting process writes so the holder knows to keep a heartbeat: `<lock>:standby`. */
const standbyOf = (name: string): string => `${name}:standby`


/**
 * True when the holder of `row` is gone. In this PID namespace its PID says so (not running, or
 * running a process started at another time). In another namespace (two containers on one
 * volume, this container after a restart, or an owner that names none) its PID means nothing
 * here: it is gone when its heartbeat has not moved for `unchangedMs` > LOCK_STALE_MS while this
 * process has waited (and said so, which makes a live holder beat) `waitedMs` at least as long;
 * both measured on this process's own monotonic clock, so a wall-clock step decides nothing.
 */
export function lockHolderGone(row: LockRow, unchangedMs: number, waitedMs: number, owner = CLAIM_OWNER, orphaned: (token: string) => boolean = isOrphanedClaim): boolean {
  const theirs = ownerNamespace(row.owner)
  if (theirs === null || theirs !== ownerNamespace(owner)) return unchangedMs > LOCK_STALE_MS && waitedMs > LOCK_STALE_MS
  return orphaned(row.owner)
}

// Dispatchers of one process share its owner, so the row is deleted only when the last of
// them on a file releases it; otherwise closing one would hand the lock to another process
// while the others still claim.
const holders = new Map<string, number>()

/** What `createStoreLock` takes besides the store; tests inject the owner and the liveness check. */
export interface StoreLockOptions {
  /** This holder's name; default this process's CLAIM_OWNER (`<pid>.<process start>.n<PID namespace>.`). */
  owner?: string
  /** True when the holder of a row no longer runs (its heartbeat unchanged and this process waiting, for so many ms); default `lockHolderGone`. */
  isGone?: (row: LockRow, unchangedMs: number, waitedMs: number) => boolean
  /** A monotonic ms clock for those durations; default performance.now. */
  monotonic?: () => number
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
  const owner = opts.owner ?? CLAIM_OWNER
  const isGone = opts.isGone ?? ((row: LockRow, unchangedMs: number, waitedMs: number) => lockHolderGone(row, unchangedMs, waitedMs, owner))
  const clock = opts.clock ?? systemClock
  const monotonic = opts.monotonic ?? (() => performance.now())
  // The holder's heartbeat as last seen, and when (monotonic) it was first seen with that value.
  let seen: { owner: string; seenAt: number; at: number } | null = null
  const mine = new Set<string>()
  // The file, whichever path spelling (relative, a symlink) each instance opened it by.
  const file = ((): string => {
    try {
      return realpathSync(store.path)
    } catch {
      return store.path
    }
  })()
  const key = (name: string): string => `${file}\0${owner}\0${name}`
  let waitingFor: string | null = null
  let waitingSince = 0
  return {
    async acquire(name) {
      const now = clock.now()
      // A holder writes a heartbeat only while someone waits: an idle server alone on its file
      // writes nothing (each write would restart a running `postbox backup`).
      const standby = store.locks.get(standbyOf(name))
      const waited = standby !== null && standby.owner !== owner && now - standby.seenAt <= LOCK_STALE_MS
      const m = monotonic()
      const gone = (row: LockRow): boolean => {
        if (seen?.owner !== row.owner || seen.seenAt !== row.seenAt) seen = { owner: row.owner, seenAt: row.seenAt, at: m }
        return isGone(row, m - seen.at, row.owner === waitingFor ? m - waitingSince : 0)
      }
      const { holder, replaced } = store.locks.take(name, owner, now, gone, waited ? LOCK_BEAT_MS : Infinity)
      if (holder !== owner) {
        if (waitingFor !== holder) {
          opts.log?.info({ lock: name, holder }, 'another process holds the dispatcher lock; this one serves the API and stands by')
          waitingFor = holder
          waitingSince = m
        }
        // One notice for every standby: renewed when it is LOCK_BEAT_MS old, whoever wrote it.
        if (!standby || now - standby.seenAt >= LOCK_BEAT_MS || standby.seenAt > now) store.locks.put(standbyOf(name), owner, now)
        return false
      }
      if (standby?.owner === owner) store.locks.release(standbyOf(name), owner)
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
