/**
 * The send of one claimed row (dispatcher.ts): on its channel, outside any transaction, its
 * outcome handed back as the settle's input; a sender that rejects is retried on the schedule.
 */
import type { Config } from '../config.js'
import type { Clock, Rng } from '../lib/clock.js'
import type { Log } from '../log.js'
import { claimedOf, type ClaimedDelivery, type SettleInput } from '../store/deliveries.js'
import type { ChannelRegistry, ChannelResult, DispatchObserver } from './channel.js'
import { nextRetryAt } from './retry-policy.js'

/** What a send needs besides its row: the channels, the clock and the default retry schedule. */
export interface SendDeps {
  channels: ChannelRegistry
  clock: Clock
  log: Log
  rng: Rng
  retrySchedule: Config['retrySchedule']
  observer?: DispatchObserver | undefined
}

/** Starts the send of `d` claimed at `now`; `report` gets its settle input once it ended (it never throws). */
export function startSend(d: ClaimedDelivery, now: number, signal: AbortSignal, deps: SendDeps, report: (input: SettleInput) => void): void {
  const { channels, clock, log, observer } = deps
  const sender = channels.get(d.channel)
  const t0 = performance.now()
  const done = (r: ChannelResult): void => {
    observer?.attempt(d.channel, r.outcome.kind, performance.now() - t0)
    report({
      id: d.id,
      claimToken: d.claimToken,
      outcome: r.outcome,
      ...(r.attempt ? { attempt: r.attempt } : {}),
      claimed: claimedOf(d),
    })
  }
  if (!sender) {
    done({ outcome: { kind: 'dead' }, attempt: { startedAt: now, durationMs: 0, error: 'channel_not_configured' } })
    return
  }
  sender.send(d, signal).then(done, (err: unknown) => {
    // A sender should resolve; one that rejects retries on the default schedule (never a fixed
    // second: that retried a throwing email 6 times in 6 s), and is dead once it is spent.
    log.error({ err, delivery: d.id }, 'channel sender rejected')
    const at = nextRetryAt(clock.now(), deps.retrySchedule, d.attempts, deps.rng)
    done({ outcome: at === null ? { kind: 'dead' } : { kind: 'retry', at }, attempt: { startedAt: now, durationMs: 0, error: 'internal' } })
  })
}

/** What `drainSends` watches and may do. */
export interface DrainDeps {
  /** Sends claimed and not yet reported. */
  inFlight: () => number
  /** Resolves when the last send in flight reported (the dispatcher's settle calls it). */
  idle: () => Promise<void>
  /** Aborts every send still running. */
  abort: () => void
  deadlineMs: number
  /** After aborting, how long senders get to report. */
  graceMs: number
  log: Log
}

/**
 * Waits for the sends in flight up to the deadline, then aborts the rest and gives them
 * `graceMs` to report; a sender that ignores the signal is left to its lease expiry.
 */
export async function drainSends(d: DrainDeps): Promise<void> {
  if (d.inFlight() === 0) return
  let expire: NodeJS.Timeout | undefined
  const waitIdleOr = (ms: number, before?: () => void): Promise<void> =>
    Promise.race([d.idle(), new Promise<void>((resolve) => {
      expire = setTimeout(resolve, ms)
      before?.()
    })]).finally(() => clearTimeout(expire))
  await waitIdleOr(d.deadlineMs)
  if (d.inFlight() === 0) return
  d.log.warn({ inFlight: d.inFlight() }, 'shutdown deadline reached; aborting in-flight deliveries')
  await waitIdleOr(d.graceMs, d.abort)
}
