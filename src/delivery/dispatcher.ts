import type { Config } from '../config.js'
import type { Clock, Rng } from '../lib/clock.js'
import type { Log } from '../log.js'
import type { Store } from '../store/index.js'
import type { ClaimedDelivery, SettleInput, SettleResult } from '../store/deliveries.js'
import type { AttemptHook, ChannelRegistry, ChannelResult, DispatchObserver } from './channel.js'
import { reportAttempts } from './attempt-hook.js'
import { createEndpointLimits } from './endpoint-limits.js'
import type { Lock } from './lock.js'
import { CLAIM_OWNER } from './claim-owner.js'
import { createForeignCounts, repairOnTakeover } from './takeover.js'
import { channelKey, dueKey } from '../store/delivery-claim.js'
import { createStoreLock } from './store-lock.js'

/** What `createDispatcher` needs. */
export interface DispatcherDeps {
  store: Store
  config: Config
  clock: Clock
  rng: Rng
  log: Log
  channels: ChannelRegistry
  /** Who may claim; default the file's dispatcher lock (one claiming process per file). */
  lock?: Lock
  /** The prefix of this dispatcher's claim tokens; default this process's (tests name another). */
  claimOwner?: string
  observer?: DispatchObserver
  /** Called after every settled attempt, outside any transaction (the library's `onAttempt`). */
  onAttempt?: AttemptHook
}

/** The claim → send → settle loop. */
export interface Dispatcher {
  /** Starts claiming: on every commit that creates due rows, and on a timer for retries. */
  start(): void
  /** Asks for a claim round soon (coalesced; never runs synchronously). */
  wake(): void
  /**
   * Stops claiming, waits for in-flight sends up to `deadlineMs` (default the configured
   * shutdown timeout), aborts the rest and settles everything; unsent claims are released.
   */
  stop(deadlineMs?: number): Promise<void>
  /** Deliveries claimed and not yet settled. */
  inFlight(): number
}

/** At most this many rows per claim statement; larger batches only add latency to the first send. */
const CLAIM_BATCH = 128
/** The share of the global cap kept for quiet endpoints (see claimRound). */
const RESERVE_SHARE = 1 / 8
/** An endpoint with fewer requests than this in flight is quiet and may use the reserve. */
const QUIET_IN_FLIGHT = 4
/** The name of the lock a dispatcher holds while it claims (the `locks` row `postbox stats` shows). */
export const DISPATCHER_LOCK = 'deliveries'
/** Outcomes gathered at most this long before one settle transaction (see scheduleFlush). */
const SETTLE_WINDOW_MS = 2
/** A settle batch this large is written at once. */
const SETTLE_BATCH = 128
/**
 * A claim that stopped looking before every endpoint had its turn is followed by another this
 * soon, so a row due far round the ring is reached in a few rounds without the claims taking
 * the event loop (each such claim costs up to ~0.7 ms).
 */
const CUT_SHORT_RETRY_MS = 5
/** A standby asks for the lock, and the holder renews it, this often (well within LOCK_BEAT_MS). */
const LOCK_CHECK_MS = 1_000
/** After aborting at the deadline, how long stop() waits for senders to report. */
const ABORT_GRACE_MS = 1000
/** A settle that failed (disk full, database locked past busy_timeout) is tried again this often. */
const SETTLE_RETRY_MS = 1000

/**
 * Creates the dispatcher. Claims happen in one synchronous statement, sends run outside any
 * transaction, and outcomes of one event-loop turn are settled in one transaction. A row is only
 * claimed when a slot is free for it (global cap, endpoint concurrency, rate tokens, half-open
 * probe), so nothing claimed waits in memory and a saturated endpoint never blocks the others.
 */
export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { store, config, clock, log, channels, observer } = deps
  const lock = deps.lock ?? createStoreLock(store, { clock, log })
  const owner = deps.claimOwner ?? CLAIM_OWNER
  const targeted = [...channels.values()].find((c) => c.slotsFor !== undefined)
  const limits = createEndpointLimits(
    store,
    new Map([...channels].map(([name, sender]) => [channelKey(name), sender.maxInFlight ?? Infinity])),
    targeted ? (key, now) => targeted.slotsFor!(key, now) : undefined,
  )
  const foreign = createForeignCounts({ store, limits, owner, clock, log })
  const running = new Set<string>()
  // Only shutdown aborts sends, and it aborts all of them: one controller per run, not per send.
  let abortAll = new AbortController()
  const results: SettleInput[] = []
  const finished: ClaimedDelivery[] = []
  let started = false
  let stopping = false
  let haveLock = false
  let acquiring = false
  // Refused until the next lock check: a standby process asks once a check, not on every enqueue.
  let refused = false
  let wakeScheduled = false
  let flushScheduled = false
  let timer: NodeJS.Timeout | null = null
  let lockTimer: NodeJS.Timeout | null = null
  let refillTimer: NodeJS.Timeout | null = null
  let cutShortTimer: NodeJS.Timeout | null = null
  let unsubscribe: (() => void) | null = null
  let drained: (() => void) | null = null
  let settleRetryTimer: NodeJS.Timeout | null = null
  const reserve = Math.floor(config.concurrency * RESERVE_SHARE)
  const defaultTimeoutMs = Math.max(config.requestTimeoutMs, ...[...channels.values()].map((c) => c.timeoutMs ?? 0))

  const wake = (): void => {
    if (!started || stopping || wakeScheduled) return
    wakeScheduled = true
    setImmediate(pump)
  }

  function pump(): void {
    wakeScheduled = false
    if (!started || stopping) return
    if (!haveLock) {
      if (refused) return
      void askLock().then((ok) => {
        // Without the lock the next lock check asks again; rows enqueued here go to the holder.
        if (ok === false) refused = true
        if (ok !== true) return
        haveLock = true
        repairOnTakeover(store, clock, log)
        foreign.count()
        wake()
      })
      return
    }
    const now = clock.now()
    const claimed: ClaimedDelivery[] = []
    try {
      claimRound(now, claimed)
    } catch (err) {
      log.error({ err }, 'claim failed')
    }
    // Outside a transaction every claim statement commits on its own: the rows of those that
    // did are in flight even when a later one failed, so they are sent, not stranded.
    for (const d of claimed) launch(d, now)
    scheduleRefill()
  }

  /**
   * Asks for the lock, one request at a time: true when held, false when another process holds
   * it, null for no answer (a request already out, an error, or the dispatcher stopped meanwhile;
   * a lock granted then is handed back unless this dispatcher held it already).
   */
  async function askLock(): Promise<boolean | null> {
    if (acquiring) return null
    acquiring = true
    try {
      const ok = await lock.acquire(DISPATCHER_LOCK)
      if (!started || stopping) {
        if (ok && !haveLock) await lock.release(DISPATCHER_LOCK)
        return null
      }
      return ok
    } catch (err) {
      log.error({ err }, 'taking the dispatcher lock failed')
      return null
    } finally {
      acquiring = false
    }
  }

  // Every LOCK_CHECK_MS (or poll, if sooner): a standby asks again, and the holder checks that the
  // lock is still its own (which is its heartbeat): if another process took it over (it judged
  // this one gone), that one claims from now on and this one stops claiming.
  function checkLock(): void {
    refused = false
    if (haveLock && foreign.active) foreign.count()
    if (haveLock) {
      void askLock().then((ok) => {
        if (ok !== false || !haveLock) return
        haveLock = false
        // Only a process that judged this one gone takes a held lock (this one hung, or its
        // heartbeat could not be written for 30 s).
        log.error({ lock: DISPATCHER_LOCK }, 'another process took the dispatcher lock (it judged this one gone: hung for 30 s, or a PID it could not see); no longer claiming')
      })
    }
    wake()
  }

  /**
   * Claims as many due rows as there are free slots, counts them as running and appends them
   * to `out` as each statement returns (so a caller still holds them if a later one throws);
   * the caller starts their sends (after the commit, when this runs inside the settle
   * transaction).
   */
  function claimRound(now: number, out: ClaimedDelivery[]): void {
    for (;;) {
      const free = config.concurrency - running.size
      if (free <= 0) return
      // The last slots of the global cap go only to endpoints with few requests in flight, so
      // slow or hanging endpoints (each holding up to its max_concurrency) can never take them
      // all and stall every other endpoint until their timeouts (docs/delivery.md isolation).
      const general = free - reserve
      const limit = Math.min(general > 0 ? general : free, CLAIM_BATCH)
      const rows = store.deliveries.claimDue({
        limit,
        now,
        defaultTimeoutMs,
        onCutShort,
        owner,
        ...(general > 0
          ? { capacity: (key: string) => limits.capacity(key, now), excludeEndpoints: limits.saturated(now) }
          : {
              // Each channel's rows without an endpoint (`#inbox`, `#email`) count as one more
              // endpoint here, so a slow mail server cannot take the reserve either.
              capacity: (key: string) => Math.min(limits.capacity(key, now), QUIET_IN_FLIGHT - limits.inFlight(key)),
              excludeEndpoints: limits.saturated(now, QUIET_IN_FLIGHT),
            }),
      })
      for (const d of rows) {
        running.add(d.id)
        limits.acquire(dueKey(d), now)
        out.push(d)
      }
      if (rows.length < limit) return
    }
  }

  // Retries due sooner than the next poll tick get their own one-shot wake.
  let soonTimer: NodeJS.Timeout | null = null
  let soonAt = Infinity
  function wakeAt(at: number, now: number): void {
    if (at >= soonAt || at - now >= config.pollIntervalMs) return
    if (soonTimer) clearTimeout(soonTimer)
    soonAt = at
    // One ms late on purpose: Node's timers run on a rounded loop clock and fire up to 1 ms
    // before Date.now() reaches `at`; a claim then would find the row not yet due, and it would
    // wait for the next poll tick.
    soonTimer = setTimeout(() => {
      soonTimer = null
      soonAt = Infinity
      wake()
    }, Math.max(1, at - now + 1))
  }

  function untrack(d: ClaimedDelivery): void {
    if (!running.delete(d.id)) return
    limits.release(dueKey(d))
  }

  function onCutShort(): void {
    if (cutShortTimer !== null) return
    cutShortTimer = setTimeout(() => {
      cutShortTimer = null
      wake()
    }, CUT_SHORT_RETRY_MS)
    cutShortTimer.unref()
  }

  function scheduleRefill(): void {
    const wait = limits.nextTokenMs(clock.now())
    if (wait === null || refillTimer !== null || wait >= config.pollIntervalMs) return
    refillTimer = setTimeout(() => {
      refillTimer = null
      wake()
    }, Math.max(1, wait))
  }

  function launch(d: ClaimedDelivery, now: number): void {
    const signal = abortAll.signal
    const sender = channels.get(d.channel)
    const t0 = performance.now()
    const done = (r: ChannelResult): void => {
      results.push({ id: d.id, claimToken: d.claimToken, outcome: r.outcome, ...(r.attempt ? { attempt: r.attempt } : {}) })
      finished.push(d)
      observer?.attempt(d.channel, r.outcome.kind, performance.now() - t0)
      scheduleFlush()
    }
    if (!sender) {
      done({ outcome: { kind: 'dead' }, attempt: { startedAt: now, durationMs: 0, error: 'channel_not_configured' } })
      return
    }
    sender.send(d, signal).then(done, (err: unknown) => {
      log.error({ err, delivery: d.id }, 'channel sender rejected')
      done({ outcome: { kind: 'retry', at: clock.now() + 1000 }, attempt: { startedAt: now, durationMs: 0, error: 'internal' } })
    })
  }

  // Group commit for outcomes. When every claimed row has reported, settle on the next turn
  // (the idle-latency path); while others are still in flight, gather results for up to
  // SETTLE_WINDOW_MS or SETTLE_BATCH rows. At 10k deliveries/s a 2 ms window turns ~20 settle
  // transactions into one, and the claim that follows each settle grows by the same factor.
  let flushTimer: NodeJS.Timeout | null = null
  function scheduleFlush(): void {
    const everyoneReported = results.length >= running.size
    if (everyoneReported || results.length >= SETTLE_BATCH) {
      if (flushTimer) clearTimeout(flushTimer)
      flushTimer = null
      if (!flushScheduled) {
        flushScheduled = true
        setImmediate(flush)
      }
      return
    }
    if (!flushScheduled && flushTimer === null) flushTimer = setTimeout(flush, SETTLE_WINDOW_MS)
  }

  function flush(): void {
    flushScheduled = false
    if (flushTimer) clearTimeout(flushTimer)
    flushTimer = null
    if (results.length === 0) return
    const batch = results.splice(0)
    const rows = finished.splice(0)
    const now = clock.now()
    const claimed: ClaimedDelivery[] = []
    let claimedInTx = false
    let settled: SettleResult[] | null = null
    // The settle and the next claim share one transaction: one commit instead of two, and the
    // freed slots are refilled at once.
    try {
      store.tx(() => {
        const out = store.deliveries.settle(batch, now)
        settled = out
        out.forEach((r, i) => {
          if (r.result === 'missed') observer?.attempt(rows[i]!.channel, 'missed', 0)
        })
        for (const d of rows) untrack(d)
        if (started && !stopping && haveLock) {
          claimRound(now, claimed)
          claimedInTx = true
        }
      })
    } catch (err) {
      // The claims rolled back with the transaction. The outcomes are kept and written again
      // shortly: dropping them would leave requests that did happen in flight until their leases
      // expire, and then send them a second time. Their tokens still guard every row.
      log.error({ err, count: batch.length }, 'settle failed; retrying')
      for (const d of rows) untrack(d)
      // The claims rolled back with the settle: their rows are pending again, not ours.
      for (const d of claimed) untrack(d)
      claimed.length = 0
      claimedInTx = false
      results.unshift(...batch)
      finished.unshift(...rows)
      if (started && !stopping && settleRetryTimer === null) {
        settleRetryTimer = setTimeout(() => {
          settleRetryTimer = null
          flush()
        }, SETTLE_RETRY_MS)
        settleRetryTimer.unref()
      }
    }
    for (const d of claimed) launch(d, now)
    if (settled !== null && deps.onAttempt) reportAttempts(deps.onAttempt, batch, rows, settled, log)
    for (const r of batch) if (r.outcome.kind === 'retry' || r.outcome.kind === 'snooze') wakeAt(r.outcome.at, now)
    if (running.size === 0 && drained) drained()
    // The claim inside the transaction already saw every row this settle made due.
    if (claimedInTx) scheduleRefill()
    else wake()
  }

  return {
    start() {
      if (started) return
      started = true
      stopping = false
      if (abortAll.signal.aborted) abortAll = new AbortController()
      unsubscribe = store.onDue(wake)
      timer = setInterval(wake, config.pollIntervalMs)
      timer.unref()
      lockTimer = setInterval(checkLock, Math.min(config.pollIntervalMs, LOCK_CHECK_MS))
      lockTimer.unref()
      wake()
    },
    wake,
    async stop(deadlineMs = config.shutdownTimeoutMs) {
      if (!started) return
      stopping = true
      unsubscribe?.()
      if (timer) clearInterval(timer)
      if (lockTimer) clearInterval(lockTimer)
      lockTimer = null
      if (refillTimer) clearTimeout(refillTimer)
      if (soonTimer) clearTimeout(soonTimer)
      if (cutShortTimer) clearTimeout(cutShortTimer)
      timer = refillTimer = soonTimer = cutShortTimer = null
      soonAt = Infinity
      // Another process may claim from now on: this one only finishes what it has in flight, and
      // the next holder counts those rows against their endpoints' limits until they settle.
      if (haveLock) {
        haveLock = false
        await lock.release(DISPATCHER_LOCK).catch((err: unknown) => log.error({ err }, 'releasing the dispatcher lock failed'))
      }
      if (running.size > 0) {
        let expire: NodeJS.Timeout | undefined
        await Promise.race([
          new Promise<void>((resolve) => (drained = resolve)),
          new Promise<void>((resolve) => (expire = setTimeout(resolve, deadlineMs))),
        ])
        clearTimeout(expire)
        if (running.size > 0) {
          log.warn({ inFlight: running.size }, 'shutdown deadline reached; aborting in-flight deliveries')
          // Senders honour the signal at once; one that does not is left to its lease expiry.
          await new Promise<void>((resolve) => {
            drained = resolve
            expire = setTimeout(resolve, ABORT_GRACE_MS)
            abortAll.abort(new Error('shutdown'))
          })
          clearTimeout(expire)
        }
        drained = null
      }
      flush()
      // One last attempt above; outcomes still unwritten are lost with the process, and the next
      // start re-offers their rows (releaseOrphanedClaims).
      if (settleRetryTimer) clearTimeout(settleRetryTimer)
      settleRetryTimer = null
      started = false
    },
    inFlight: () => running.size,
  }
}
