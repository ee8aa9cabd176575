import type { AttemptRecord, Channel, ClaimedDelivery, Outcome } from '../store/deliveries.js'

/** What a channel reports for one claimed delivery. */
export interface ChannelResult {
  outcome: Outcome
  /** The attempt to log; omit when nothing was sent. */
  attempt?: AttemptRecord
  /** Extra facts for endpoint health (webhook channel only). */
  health?: { breakerFailure: boolean; disable: 'gone' | null; success: boolean }
}

/**
 * A way of sending one claimed delivery: webhook, inbox or email. The dispatcher owns claiming
 * and settling; a sender only does the I/O and maps what happened to an Outcome (computing
 * retry times with retry-policy.ts). It must resolve, never reject, and honour `signal`.
 */
export interface ChannelSender {
  /** Request timeout for this channel's rows without an endpoint; sets the lease. */
  readonly timeoutMs?: number
  /**
   * At most this many of the channel's rows without an endpoint in flight (a mail server that
   * takes a few messages at a time); absent = only the global cap. Rows beyond it stay pending,
   * so they never hold the slots other channels' rows need.
   */
  readonly maxInFlight?: number
  send(delivery: ClaimedDelivery, signal: AbortSignal): Promise<ChannelResult>
}

/** Senders by channel name; the dispatcher routes each claimed row through it. */
export type ChannelRegistry = ReadonlyMap<Channel, ChannelSender>

/** Receives one call per finished attempt; the metrics layer implements it. */
export interface DispatchObserver {
  attempt(channel: Channel, outcome: 'success' | 'retry' | 'dead' | 'snooze' | 'release' | 'missed', durationMs: number): void
}
