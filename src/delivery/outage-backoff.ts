import { isStorageUnavailable } from '../errors.js'
import { nextAttemptAt, RECONNECT_BACKOFF, type BackoffPolicy } from '../lib/backoff.js'
import type { Rng } from '../lib/clock.js'
import type { Log } from '../log.js'

/**
 * The dispatcher's pause while PostgreSQL cannot be reached (docs/operations.md, "When the
 * database drops connections or restarts"). A claim or settle that fails because the database is
 * unavailable (isStorageUnavailable: a terminated backend, a restart, a refused connection) puts
 * claims off for the reconnect backoff, which grows with each consecutive failure; the first
 * success, or a sign that the database is back (the listening connection reconnected), ends the
 * pause. One log line says the database went away and one that it came back; the attempts in
 * between log at debug level only. SQLite keeps its plain retries (its busy or full file is not
 * a connection to wait for): `enabled` false makes every call a no-op.
 */
export interface OutageBackoff {
  /** True while claims wait: the last failure was an outage and its wait has not passed at `now`. */
  paused(now: number): boolean
  /**
   * Records a failed claim or settle (`what`) at `now`: for an outage, the wait (ms) before the
   * next try, logged; null for any other error (the caller logs it as before).
   */
  failed(err: unknown, now: number, what: string): number | null
  /** A claim or settle reached the database. */
  succeeded(): void
  /** The database is back (a reconnect said so): the next claim runs at once. */
  resume(): void
}

/** Options of `createOutageBackoff`. */
export interface OutageBackoffOptions {
  enabled: boolean
  rng: Rng
  log: Log
  policy?: BackoffPolicy
}

/** A pause that is off until the first outage. */
export function createOutageBackoff(opts: OutageBackoffOptions): OutageBackoff {
  const policy = opts.policy ?? RECONNECT_BACKOFF
  let failures = 0
  let until = 0
  return {
    paused: (now) => opts.enabled && failures > 0 && now < until,
    failed(err, now, what) {
      if (!opts.enabled || !isStorageUnavailable(err)) return null
      failures++
      until = nextAttemptAt(now, failures, opts.rng, policy)
      if (failures === 1) opts.log.error({ err }, `${what} failed: the database is unavailable; retrying with backoff`)
      else opts.log.debug({ err, failures }, `${what} failed again: the database is still unavailable`)
      return until - now
    },
    succeeded() {
      if (failures === 0) return
      opts.log.info({ failures }, 'the database is reachable again; claiming resumes')
      failures = 0
      until = 0
    },
    resume() {
      until = 0
    },
  }
}
