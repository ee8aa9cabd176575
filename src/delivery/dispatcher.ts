import type { Config } from '../config.js'
import type { Clock, Rng } from '../lib/clock.js'
import type { Log } from '../log.js'
import type { Store } from '../store/index.js'
import { channelKey, dueKey, type ClaimedDelivery, type SettleInput, type SettleResult } from '../store/deliveries.js'
import type { AttemptHook, ChannelRegistry, DispatchObserver } from './channel.js'
import { reportAttempts } from './attempt-hook.js'
import { createEndpointLimits } from './endpoint-limits.js'
import { createStoreLease, LEASE_RENEW_MS, LEASE_STANDBY_CHECK_MS, type Lease } from './lease.js'
import { createOutageBackoff } from './outage-backoff.js'
import { cancelOrphanedRequests } from './orphaned-requests.js'
import { drainSends, startSend, type SendDeps } from './start-send.js'
import { claimRound, claimSlots } from './claim-round.js'
import { ABORT_GRACE_MS, CUT_SHORT_RETRY_MS, SETTLE_BATCH, SETTLE_RETRY_MS, SETTLE_WINDOW_MS } from './dispatcher-tuning.js'

/** What `createDispatcher` needs. */
export interface DispatcherDeps {
  store: Store
  config: Config
  clock: Clock
  rng: Rng
  log: Log
  channels: ChannelRegistry
  /**
   * Who may claim. Default on SQLite: the file's delivery lease (one claiming process per file,
   * lease.ts); on PostgreSQL none (every node claims; limits are held in the database). `null`:
   * no lease, claim at once (tests, a store only this dispatcher uses).
   */
  lease?: Lease | null
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

/**
 * Creates the dispatcher. Claims happen in one statement per batch, sends run outside any
 * transaction, and outcomes gathered over a short window are settled in one transaction with the
 * next claim. A row is only claimed when a slot is free for it (global cap, endpoint concurrency,
 * rate tokens, half-open probe), so nothing claimed waits in memory and a saturated endpoint never
 * blocks the others. Claims and settles run one at a time (the `lane`): each reads the free slots
 * and writes the rows it took before the next one starts.
 */
export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { store, config, clock, log, channels, observer } = deps
  const lease = deps.lease === undefined ? (store.backend === 'sqlite' ? createStoreLease(store, { log }) : null) : deps.lease
  const targeted = [...channels.values()].find((c) => c.slotsFor !== undefined)
  const limits = createEndpointLimits(
    store,
    new Map([...channels].map(([name, sender]) => [channelKey(name), sender.maxInFlight ?? Infinity])),
    targeted ? (key, now) => targeted.slotsFor!(key, now) : undefined,
  )
  const running = new Set<string>()
  // While PostgreSQL is unreachable, claims and settles wait out a growing backoff.
  const outage = createOutageBackoff({ enabled: store.backend === 'postgres', rng: deps.rng, log })
  // Only shutdown aborts sends, and it aborts all of them: one controller per run, not per send.
  let abortAll = new AbortController()
  const results: SettleInput[] = []
  const finished: ClaimedDelivery[] = []
  let started = false
  let stopping = false
  // Without a lease there is nothing to take: this dispatcher claims from the start.
  let haveLease = lease === null
  let asking = false
  let wakeScheduled = false
  let claimQueued = false
  // The store said rows were made due since the last claim began (its onDue), so that claim
  // need not first ask whether there is work.
  let toldDue = false
  let flushScheduled = false
  // Endpoints were loaded after a claim met them uncached: claim again once a claim goes round
  // every endpoint (not cut short), since the passes between may already have gone past them.
  let reloaded = false
  let cutShort = false
  // Every claim and settle, in turn (see the doc comment above).
  let lane: Promise<void> = Promise.resolve()
  let timer: NodeJS.Timeout | null = null
  let leaseTimer: NodeJS.Timeout | null = null
  let refillTimer: NodeJS.Timeout | null = null
  let cutShortTimer: NodeJS.Timeout | null = null
  let unsubscribe: (() => void) | null = null
  let drained: (() => void) | null = null
  let settleRetryTimer: NodeJS.Timeout | null = null
  const sendDeps: SendDeps = { channels, clock, log, rng: deps.rng, retrySchedule: config.retrySchedule, observer }
  const slots = claimSlots(config, channels, running, limits, onCutShort)

  /** Runs `job` after every claim and settle queued before it; what it throws is logged. */
  const inLane = (job: () => Promise<void>, what: string): Promise<void> =>
    (lane = lane.then(job).catch((err: unknown) => log.error({ err }, `${what} failed`)))

  const wake = (): void => {
    if (!started || stopping || wakeScheduled) return
    wakeScheduled = true
    setImmediate(pump)
  }

  function pump(): void {
    wakeScheduled = false
    // A standby does not claim; its lease check asks again (rows enqueued here go to the holder).
    if (!started || stopping || !haveLease || claimQueued) return
    claimQueued = true
    void inLane(claimJob, 'claim')
  }

  async function claimJob(): Promise<void> {
    claimQueued = false
    if (!started || stopping || !haveLease || outage.paused(clock.now())) return
    const dueHint = toldDue
    toldDue = false
    const claimed: ClaimedDelivery[] = []
    const again = reloaded
    cutShort = false
    let now = clock.now()
    try {
      await limits.refresh()
      now = clock.now()
      await claimRound(store, now, claimed, slots, dueHint)
      outage.succeeded()
    } catch (err) {
      if (outage.failed(err, clock.now(), 'claim') === null) log.error({ err }, 'claim failed')
    }
    // Outside a transaction every claim statement commits on its own: the rows of those that
    // did are in flight even when a later one failed, so they are sent, not stranded.
    for (const d of claimed) launch(d, now)
    await afterClaim(again)
  }

  /**
   * Loads endpoints a claim met before they were cached (and claims again), then arms the refill
   * timer. `again`: endpoints were loaded before this claim started.
   */
  async function afterClaim(again: boolean): Promise<void> {
    if (again && !cutShort) {
      reloaded = false
      wake()
    }
    if (await limits.loadMissing()) {
      reloaded = true
      wake()
    }
    scheduleRefill()
  }

  /**
   * Takes or renews the lease (one request at a time). A standby that gets it takes over: it
   * repairs what a holder may have left and starts claiming. A holder that lost it (another
   * process took it after it expired: this one hung, or could not write for a whole lease)
   * stops claiming; its rows in flight settle by their claim tokens.
   */
  async function checkLease(): Promise<void> {
    if (lease === null || asking || !started || stopping) return
    asking = true
    try {
      const ok = await lease.acquire()
      // Stopped meanwhile: a lease just taken is handed back at once (a standby need not wait out its expiry).
      if (!started || stopping) {
        if (ok && !haveLease) await lease.release()
        return
      }
      if (ok && !haveLease) {
        haveLease = true
        await repairAtStart()
        wake()
      } else if (!ok && haveLease) {
        haveLease = false
      }
    } catch (err) {
      log.error({ err }, 'taking or renewing the delivery lease failed')
    } finally {
      asking = false
    }
  }

  /** A row waiting for its ordering key's turn with nothing older left becomes due (the trigger should leave none). */
  async function repairAtStart(): Promise<void> {
    try {
      const woken = await store.deliveries.releaseWaitingInOrder(clock.now())
      if (woken > 0) log.warn({ woken }, 'released deliveries left waiting for their ordering key')
    } catch (err) {
      log.error({ err }, 'releasing waiting deliveries failed')
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
    cutShort = true
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
    startSend(d, now, abortAll.signal, sendDeps, (input) => {
      results.push(input)
      finished.push(d)
      scheduleFlush()
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

  function flush(): Promise<void> {
    flushScheduled = false
    if (flushTimer) clearTimeout(flushTimer)
    flushTimer = null
    return inLane(settleJob, 'settle')
  }

  async function settleJob(): Promise<void> {
    if (results.length === 0) return
    const batch = results.splice(0)
    const rows = finished.splice(0)
    const claiming = started && !stopping && haveLease
    // Before the transaction: it may not use the outer store, and the claim's capacity is synchronous.
    if (claiming) await limits.refresh().catch((err: unknown) => log.warn({ err }, 'endpoint settings not refreshed'))
    const now = clock.now()
    const claimed: ClaimedDelivery[] = []
    const again = reloaded
    cutShort = false
    let claimedInTx = false
    let settled: SettleResult[] | null = null
    // The settle and the next claim share one transaction: one commit instead of two, and the
    // freed slots are refilled at once.
    try {
      await store.tx(async (s) => {
        const out = await s.deliveries.settle(batch, now)
        settled = out
        out.forEach((r, i) => {
          if (r.result === 'missed') observer?.attempt(rows[i]!.channel, 'missed', 0)
        })
        await cancelOrphanedRequests(s, rows, out, now)
        for (const d of rows) untrack(d)
        if (claiming && started && !stopping && haveLease) {
          await claimRound(s, now, claimed, slots)
          claimedInTx = true
        }
      })
    } catch (err) {
      // The claims rolled back with the transaction. The outcomes are kept and written again
      // shortly (after the backoff while the database is unreachable): dropping them would leave
      // requests that did happen in flight until their leases expire, and then send them a
      // second time. Their tokens still guard every row.
      const wait = outage.failed(err, clock.now(), 'settle')
      if (wait === null) log.error({ err, count: batch.length }, 'settle failed; retrying')
      settled = null
      for (const d of rows) untrack(d)
      // The claims rolled back with the settle: their rows are pending again, not ours.
      for (const d of claimed) untrack(d)
      claimed.length = 0
      claimedInTx = false
      results.unshift(...batch)
      finished.unshift(...rows)
      if (!stopping && started && settleRetryTimer === null) {
        settleRetryTimer = setTimeout(() => {
          settleRetryTimer = null
          void flush()
        }, wait ?? SETTLE_RETRY_MS)
        settleRetryTimer.unref()
      }
      return
    }
    outage.succeeded()
    for (const d of claimed) launch(d, now)
    if (settled !== null && deps.onAttempt) reportAttempts(deps.onAttempt, batch, rows, settled, log)
    for (const r of batch) if (r.outcome.kind === 'retry' || r.outcome.kind === 'snooze') wakeAt(r.outcome.at, now)
    if (running.size === 0 && drained) drained()
    // The claim inside the transaction already saw every row this settle made due.
    if (claimedInTx) await afterClaim(again)
    else wake()
  }

  return {
    start() {
      if (started) return
      started = true
      stopping = false
      if (abortAll.signal.aborted) abortAll = new AbortController()
      // Also called after the listening connection reconnected (notifications may have been
      // missed): the claim that follows reads the database once, even during an outage's pause.
      unsubscribe = store.onDue(() => {
        toldDue = true
        outage.resume()
        wake()
      })
      timer = setInterval(wake, config.pollIntervalMs)
      timer.unref()
      if (lease !== null) {
        // A standby checks often (a read); the holder's lease only writes every LEASE_RENEW_MS.
        leaseTimer = setInterval(() => void checkLease(), Math.min(LEASE_STANDBY_CHECK_MS, LEASE_RENEW_MS))
        leaseTimer.unref()
        void checkLease()
      } else {
        void repairAtStart().then(wake)
      }
      wake()
    },
    wake,
    async stop(deadlineMs = config.shutdownTimeoutMs) {
      if (!started) return
      stopping = true
      unsubscribe?.()
      if (timer) clearInterval(timer)
      if (leaseTimer) clearInterval(leaseTimer)
      if (refillTimer) clearTimeout(refillTimer)
      if (soonTimer) clearTimeout(soonTimer)
      if (cutShortTimer) clearTimeout(cutShortTimer)
      timer = leaseTimer = refillTimer = soonTimer = cutShortTimer = null
      soonAt = Infinity
      // No claim from now on; one already running finishes first (its rows are then in `running`).
      await lane
      await drainSends({
        inFlight: () => running.size,
        idle: () => new Promise<void>((resolve) => (drained = resolve)),
        abort: () => abortAll.abort(new Error('shutdown')),
        deadlineMs,
        graceMs: ABORT_GRACE_MS,
        log,
      })
      drained = null
      if (settleRetryTimer) clearTimeout(settleRetryTimer)
      settleRetryTimer = null
      // One last attempt; outcomes still unwritten are lost with the process, and their rows are
      // offered again when their claim leases expire.
      await flush()
      // Released only now, after the drain: a standby that took over earlier would claim next to
      // this process's requests still in flight, and an endpoint's max_concurrency would not hold.
      if (lease !== null && haveLease) {
        await lease.release().catch((err: unknown) => log.error({ err }, 'releasing the delivery lease failed'))
      }
      haveLease = lease === null
      started = false
    },
    inFlight: () => running.size,
  }
}
