import { randomBytes } from 'node:crypto'
import { realpathSync } from 'node:fs'
import { hostname } from 'node:os'
import { systemClock, type Clock } from '../lib/clock.js'
import type { Log } from '../log.js'
import type { Store } from '../store/index.js'
import type { LockRow } from '../store/locks.js'

/*
 * One serving process per SQLite file (docs/operations.md, "Two servers on one file"): the one
 * holding the `deliveries` lease claims; any other serves its API, enqueues, and stands by.
 *
 * Why 15 s and 5 s: the holder renews three times per lease, so one slow renewal (a busy disk, a
 * long GC pause, a write waiting out busy_timeout's 5 s) never loses it, while a standby takes
 * over at most ~16 s after the holder was killed (the lease, plus one standby check). The rows the
 * dead holder had in flight are offered again only after their own claim leases (their request
 * timeout + at least 15 s, docs/delivery.md): they may still be on the wire. Nothing looks at
 * another process: the expiry decides. The cost is one small write per 5 s on an idle server.
 * Times are the wall clock of the processes sharing the file (one machine, or containers on one
 * volume, which share it too); a clock stepped forward by more than the lease lets a standby
 * take over early, and the former holder stops claiming at its next renewal.
 */

/** How long a lease lasts from its last renewal. */
export const LEASE_TTL_MS = 15_000
/** The holder renews this often (a third of the lease). */
export const LEASE_RENEW_MS = 5_000
/** A standby checks this often whether the lease is free (a read; a write only to take it). */
export const LEASE_STANDBY_CHECK_MS = 1_000
/** The lease a dispatcher holds while it claims (the `locks` row `postbox stats` shows). */
export const DELIVERY_LEASE = 'deliveries'

/**
 * This process's lease owner: `<pid>.<random>@<host>`. Only the random part makes it unique; the
 * PID and host are there for people reading `postbox stats`, and nothing decides by them.
 */
export const PROCESS_LEASE_OWNER = `${process.pid}.${randomBytes(6).toString('hex')}@${hostname()}`

/** Who may claim deliveries: taken, renewed and released through one call each. */
export interface Lease {
  /** The owner this lease writes. */
  readonly owner: string
  /**
   * Takes the lease when it is free or expired, renews it when this process holds it (a write
   * at most every `renewMs`); resolves true while this process holds it.
   */
  acquire(): Promise<boolean>
  /** Gives the lease up (a clean stop), so a standby takes over at its next check. */
  release(): Promise<void>
}

/** What `createStoreLease` takes besides the store (tests shorten the times and name owners). */
export interface StoreLeaseOptions {
  name?: string
  /** Default PROCESS_LEASE_OWNER: every dispatcher of one process shares it, so they all claim. */
  owner?: string
  ttlMs?: number
  renewMs?: number
  /** The wall clock the expiries are written in; default the system clock (shared by processes). */
  clock?: Clock
  log?: Log
}

// Dispatchers of one process share its owner, so the row is deleted only when the last of them
// on a file releases it; otherwise one closing would hand the lease on while the others claim.
const holders = new Map<string, number>()

/**
 * The delivery lease over the store's `locks` table (SQLite). Logs once when it stands by (and
 * whom for), when it takes the lease (over an expired one: a takeover), and when it lost it.
 */
export function createStoreLease(store: Store, opts: StoreLeaseOptions = {}): Lease {
  const name = opts.name ?? DELIVERY_LEASE
  const owner = opts.owner ?? PROCESS_LEASE_OWNER
  const ttlMs = opts.ttlMs ?? LEASE_TTL_MS
  const renewMs = opts.renewMs ?? LEASE_RENEW_MS
  const clock = opts.clock ?? systemClock
  const log = opts.log
  const locks = store.locks
  if (!locks) throw new Error('the delivery lease needs a SQLite store (PostgreSQL nodes all claim, without one)')
  // The file, whichever path spelling (relative, a symlink) each instance opened it by.
  const file = ((): string => {
    try {
      return realpathSync(store.path)
    } catch {
      return store.path
    }
  })()
  const key = `${file}\0${owner}\0${name}`
  let held = false
  let renewedAt = 0
  let waitingFor: string | null = null
  const iso = (t: number): string => new Date(t).toISOString()

  return {
    owner,
    async acquire() {
      const now = clock.now()
      // A clock that went back counts as due too, so the expiry never stays far ahead.
      if (held && now - renewedAt < renewMs && now >= renewedAt) return true
      const r = await locks.acquire(name, owner, now, ttlMs)
      if (!r.held) {
        if (held) {
          held = false
          holders.set(key, Math.max(0, (holders.get(key) ?? 1) - 1))
          log?.error({ lease: name, holder: r.holder.owner }, 'another process took the delivery lease (this one did not renew it in time); no longer claiming')
        }
        if (waitingFor !== r.holder.owner) {
          waitingFor = r.holder.owner
          log?.info({ lease: name, holder: r.holder.owner, expires_at: iso(r.holder.expiresAt) }, 'another process holds the delivery lease; this one serves the API and stands by, and takes over when the lease is released or expires')
        }
        return false
      }
      renewedAt = now
      if (!held) {
        held = true
        holders.set(key, (holders.get(key) ?? 0) + 1)
        if (r.replaced !== null) log?.warn({ lease: name, previous: r.replaced }, 'took over the delivery lease after it expired (its holder stopped renewing); its in-flight rows are offered again after their claim leases')
        else if (waitingFor !== null) log?.info({ lease: name }, 'delivery lease released by its holder and taken; delivering')
        waitingFor = null
      }
      return true
    },
    async release() {
      if (!held) return
      held = false
      const left = (holders.get(key) ?? 1) - 1
      if (left > 0) return void holders.set(key, left)
      holders.delete(key)
      await locks.release(name, owner)
    },
  }
}

/** The lease row as `postbox stats` prints it: the holder, since when, until when, and whether it ran out. */
export function describeLease(row: LockRow, now: number): { owner: string; pid: number | null; host: string | null; since: string; expires_at: string; expired: boolean } {
  const m = /^(\d+)\.[0-9a-f]+@(.*)$/.exec(row.owner)
  return {
    owner: row.owner,
    pid: m ? Number(m[1]) : null,
    host: m ? m[2]! : null,
    since: new Date(row.acquiredAt).toISOString(),
    expires_at: new Date(row.expiresAt).toISOString(),
    expired: row.expiresAt <= now,
  }
}
