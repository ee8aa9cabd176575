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
  /**
   * For a channel whose rows carry a target key (`@<origin>`, the request channel): how many of
   * that key's rows may be in flight at `now` (its concurrency, one probe while its breaker is
   * half-open, none while open). The dispatcher subtracts those already in flight.
   */
  slotsFor?(key: string, now: number): number
  send(delivery: ClaimedDelivery, signal: AbortSignal): Promise<ChannelResult>
}

/** Senders by channel name; the dispatcher routes each claimed row through it. */
export type ChannelRegistry = ReadonlyMap<Channel, ChannelSender>

/** Receives one call per finished attempt; the metrics layer implements it. */
export interface DispatchObserver {
  attempt(channel: Channel, outcome: 'success' | 'retry' | 'dead' | 'snooze' | 'release' | 'missed', durationMs: number): void
}

/**
 * One finished attempt, as the library's `onAttempt` hook receives it (docs/requests.md), after
 * its outcome is committed. `outcome` is what the attempt came to (a retry on the last attempt
 * is `dead`); `status` the row's status after it, null when another claim had taken it over.
 */
export interface AttemptReport {
  delivery_id: string
  channel: Channel
  /** The attempt number, 1-based. */
  attempt: number
  outcome: 'success' | 'retry' | 'dead' | 'snooze'
  status: 'pending' | 'success' | 'dead' | 'cancelled' | 'in_flight' | null
  status_code: number | null
  error: string | null
  duration_ms: number
  started_at: number
  event_id: string | null
  endpoint_id: string | null
  notification_id: string | null
  /** The request's id (`req_…`) for the request channel, else null. */
  request_id: string | null
}

/** Called after every attempt of every channel, outside any transaction; what it throws is logged and ignored. */
export type AttemptHook = (attempt: AttemptReport) => void | Promise<void>
