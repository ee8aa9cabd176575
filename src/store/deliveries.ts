/**
 * The types of the delivery queue (store/deliveries.ts). They hold no SQLite types, so another
 * backend can implement the same contract. Import them from './deliveries.js'.
 */
import { randomBytes } from 'node:crypto'
import type { Page } from '../lib/cursor.js'


/** Where a delivery is in its lifecycle (docs/delivery.md). */
export type DeliveryStatus = 'pending' | 'in_flight' | 'success' | 'dead' | 'cancelled'

/**
 * The next_attempt_at of a pending row waiting for an older row of its ordering key on an
 * ordered endpoint (the largest date; schema.sql's triggers set and clear it).
 */
export const WAITING_IN_ORDER = 8_640_000_000_000_000
/**
 * The channels that share the delivery queue. `webhook` rows go to an endpoint; `notify-webhook`
 * rows are a notification's webhook channel, which publishes a `notification.<topic>` event.
 */
export type Channel = 'webhook' | 'inbox' | 'email' | 'notify-webhook' | 'request'

/** A delivery row, mapped to camelCase. */
export interface Delivery {
  id: string
  /** The application of its event (or notification). */
  appId: string
  channel: Channel
  eventId: string | null
  endpointId: string | null
  notificationId: string | null
  recipient: string | null
  eventType: string
  orderingKey: string | null
  payload: string | null
  groupKey: string | null
  status: DeliveryStatus
  attempts: number
  maxAttempts: number
  nextAttemptAt: number
  claimToken: string | null
  leaseUntil: number | null
  lastStatusCode: number | null
  lastError: string | null
  createdAt: number
  updatedAt: number
  completedAt: number | null
  /** A request's origin key (`@<origin>`, see DUE_KEY); null on every other row. */
  targetKey: string | null
}

/** A row returned by `claimDue`: it holds a fresh claim token and a lease. */
export interface ClaimedDelivery extends Delivery {
  claimToken: string
  leaseUntil: number
  /** The event's body for rows with an event (null without one, or once retention removed it), read by the claim. */
  eventBody: string | null
}

/**
 * What `enqueue` needs to create one delivery. A row with an event is unique per
 * (eventId, endpointId), one with a notification per (notificationId, recipient, channel); a
 * key with a null part dedups nothing (SQLite unique indexes treat NULLs as distinct), so
 * webhook rows carry both ids and notification rows a recipient.
 */
export interface NewDelivery {
  /** The row's id, when the caller orders rows written by separate calls (a notification's fan-out); a new `dlv_` id otherwise. */
  id?: string
  channel: Channel
  eventId?: string | null
  endpointId?: string | null
  notificationId?: string | null
  recipient?: string | null
  eventType: string
  orderingKey?: string | null
  payload?: string | null
  groupKey?: string | null
  /** A request's origin key (`@<origin>`): its rows take slots and turns under it. */
  targetKey?: string | null
  maxAttempts: number
  nextAttemptAt: number
  /** The application; `default` when not given. */
  appId?: string
}

/** One logged attempt. */
export interface AttemptRecord {
  startedAt: number
  durationMs: number
  statusCode?: number | null
  error?: string | null
  responseBody?: string | null
}

/** A success's attempt stays in its delivery row when its response body is at most this long (schema.sql, v12). */
export const ROW_ATTEMPT_BODY_LIMIT = 1024

/**
 * Whether a success's attempt is kept in its delivery row instead of an attempts row: it has no
 * error and a short response body (schema.sql, v12; docs/delivery.md, "Attempt log").
 */
export function keptInRow(a: AttemptRecord): boolean {
  return (a.error ?? null) === null && (a.responseBody?.length ?? 0) <= ROW_ATTEMPT_BODY_LIMIT
}

/** An attempt as stored: an attempts row, or (id 0) a success's attempt kept in its delivery row. */
export interface Attempt extends Required<AttemptRecord> {
  id: number
  deliveryId: string
  attempt: number
  outcome: string
}

/** How one claimed attempt ended (docs/delivery.md, "Responses and retries"). */
export type Outcome =
  | { kind: 'success' }
  | { kind: 'retry'; at: number }
  | { kind: 'dead' }
  | { kind: 'snooze'; at: number }
  | { kind: 'release' }

/** One entry of a `settle` batch. */
export interface SettleInput {
  id: string
  claimToken: string
  outcome: Outcome
  /** The attempt to log; omit when nothing was sent (release, or a snooze before sending). */
  attempt?: AttemptRecord
  /**
   * What the claim returned for the row, when the caller has it: its `attempts`, and whether it
   * has an ordering key. With both, a store may settle a success without reading the row back.
   */
  claimed?: { attempts: number; keyed: boolean }
  /** The attempt log's outcome instead of the kind's own name (a pull endpoint's `released`, `snoozed`, docs/pull-endpoints.md). */
  logAs?: string
}

/** SettleInput.claimed for a row as its claim returned it. */
export const claimedOf = (d: Pick<ClaimedDelivery, 'attempts' | 'orderingKey'>): { attempts: number; keyed: boolean } => ({
  attempts: d.attempts,
  keyed: d.orderingKey !== null,
})

/** The result of one settle entry: `missed` when the token no longer matches. */
export type SettleResult = { result: 'settled'; status: DeliveryStatus; attempts: number } | { result: 'missed' }

/** Options for `claimDue`. */
export interface ClaimOptions {
  limit: number
  now: number
  /** Default request timeout for rows without an endpoint (inbox, email). */
  defaultTimeoutMs: number
  /** Request timeout by channel for rows without an endpoint, before defaultTimeoutMs (the lease is its own timeout + the margin, docs/delivery.md). */
  channelTimeoutsMs?: Readonly<Record<string, number>>
  /** Added to the timeout to make the lease; docs/delivery.md: at least 15 s. */
  leaseMarginMs?: number
  /**
   * Remaining slots per key (concurrency, rate tokens, half-open probe): an endpoint id, or
   * `#<channel>` for the rows without an endpoint (`#inbox`, `#email`, `#notify-webhook`, see
   * DUE_KEY); absent = unlimited.
   */
  capacity?: (key: string) => number
  /** Keys (endpoints, `#<channel>`) to skip entirely this round (saturated). */
  excludeEndpoints?: readonly string[]
  /**
   * Called when the claim stopped looking for due rows before every endpoint had its turn
   * (more than PASS_ENDPOINTS endpoints with pending rows behind a saturated one): claim again
   * soon, and the next claim goes on from there.
   */
  onCutShort?: () => void
  /** Written before each claim token (a prefix naming the claimer, for logs and tests); default none. */
  owner?: string
  /**
   * The caller was just told that rows were made due (a store's `onDue`): PostgreSQL then skips
   * the one-read check for work with which an idle poll avoids opening a transaction.
   */
  dueHint?: boolean
}

/** Options for `claimPull`: a consumer's claim on one pull endpoint (docs/pull-endpoints.md). */
export interface PullClaimOptions {
  endpointId: string
  /** At most this many rows. */
  max: number
  /** The lease each claimed row gets: now + visibilityMs. */
  visibilityMs: number
  /** Only rows of these event types; null = every type. */
  eventTypes: readonly string[] | null
  now: number
}

/** Filters for `list`. */
export interface DeliveryFilter {
  status?: DeliveryStatus
  endpointId?: string
  eventType?: string
  eventId?: string
  notificationId?: string
  /** Only this application's deliveries. */
  appId?: string
  /** Only the rows of this channel (a scoped caller's list: `webhook`). */
  channel?: Channel
  limit: number
  cursor?: string | null
}

/** The delivery queue: enqueue, claim, settle and the operator actions, as plain functions. */
export interface DeliveriesStore {
  enqueue(row: NewDelivery, now: number): { id: string; created: boolean }
  /**
   * Enqueues several rows, results in input order, exactly as `enqueue` called on each in turn
   * (a repeat, of a stored row or of an earlier row of the batch, is `created: false` with the
   * stored id; a keyed row waits behind an earlier row of the batch). PostgreSQL: one statement
   * (two when some row repeats).
   */
  enqueueMany(rows: readonly NewDelivery[], now: number): { id: string; created: boolean }[]
  /**
   * Inserts a notification row (no event, no endpoint) already delivered: status `success`,
   * attempts 1, completed at `now`, never claimed or settled. For a channel whose work is done in
   * the same transaction (the inbox). Unique per (notificationId, recipient, channel) as enqueue;
   * log its attempt with `logDelivered`.
   */
  insertDelivered(row: NewDelivery, now: number): { id: string; created: boolean }
  /** `insertDelivered` for several rows, results in input order as if called on each in turn. PostgreSQL: one statement (two when some row repeats). */
  insertDeliveredMany(rows: readonly NewDelivery[], now: number): { id: string; created: boolean }[]
  /** Logs the one success attempt (attempt 1, no status code) of rows inserted by `insertDelivered`, in one statement. */
  logDelivered(ids: readonly string[], attempt: AttemptRecord): void
  claimDue(opts: ClaimOptions): ClaimedDelivery[]
  /**
   * A consumer's claim on a pull endpoint: expires its lapsed leases, ends its exhausted due rows,
   * then claims its oldest due rows (ordering barrier, `max_concurrency` across every consumer)
   * with one fresh token and a lease of `visibilityMs`.
   */
  claimPull(opts: PullClaimOptions): ClaimedDelivery[]
  /**
   * Makes due every row waiting for its ordering key's turn (WAITING_IN_ORDER) that no longer
   * has an older unfinished row, or whose endpoint is no longer ordered; returns how many. A
   * repair the dispatcher runs at start: the schema's trigger should leave no such row.
   */
  releaseWaitingInOrder(now: number): number
  settle(results: readonly SettleInput[], now: number): SettleResult[]
  get(id: string): Delivery | null
  attempts(id: string): Attempt[]
  list(filter: DeliveryFilter): Page<Delivery>
  byEvent(eventId: string): Delivery[]
  /** The notification's deliveries in id order, at most `limit`. */
  byNotification(notificationId: string, limit?: number): Delivery[]
  /** How many deliveries of the notification are in each status (from its index). */
  countsByNotification(notificationId: string): Record<DeliveryStatus, number>
  /** The pending members of a digest group that are due at `now`. */
  pendingInGroup(groupKey: string, now: number): Delivery[]
  /**
   * Moves the due time of still-pending rows to `until`, so no claim takes them while a digest
   * that already includes them is being sent; returns how many were moved.
   */
  holdPending(ids: readonly string[], until: number, now: number): number
  /**
   * Settles a pending digest member that went out in another delivery's message: counts and logs
   * `attempt` as its own, then ends it (success, dead) or keeps it pending until the retry's `at`
   * (dead when that was its last attempt). Returns the new status, or null when it was not pending.
   */
  carryGroupMember(
    id: string,
    outcome: { kind: 'success' } | { kind: 'dead' } | { kind: 'retry'; at: number },
    attempt: AttemptRecord,
    now: number,
  ): DeliveryStatus | null
  /** Back to pending with attempts reset; `endpoint_unavailable` when its endpoint is disabled or deleted. */
  redeliver(id: string, now: number): 'ok' | 'not_found' | 'not_eligible' | 'endpoint_unavailable'
  recover(endpointId: string, since: number, until: number, now: number): number
  cancelForEndpoint(endpointId: string, now: number): number
  killPendingForEndpoint(endpointId: string, error: string, now: number): number
  /**
   * Moves the endpoint's pending rows due before `until` to `until` (a breaker pause), so claims
   * do not walk past them on every round while the endpoint is down; returns how many moved.
   */
  deferPendingForEndpoint(endpointId: string, until: number, now: number): number
  /** Makes the rows a pause deferred to `until` due now (the breaker closed); returns how many. */
  releaseHeldForEndpoint(endpointId: string, until: number, now: number): number
  /** Rows per status: a pass over the whole table, for the CLI's `stats`, not for every scrape. */
  countByStatus(): Record<DeliveryStatus, number>
  /** Pending and in-flight rows, counted from the partial indexes (cost follows the queue, not history). */
  queueDepth(): { pending: number; in_flight: number }
  /** Pending rows per endpoint id (one pass over the pending queue, not over history). */
  pendingByEndpoint(): Record<string, number>
  oldestPendingAt(): number | null
}

/** Stored response bodies are capped at 16 KiB (docs/delivery.md). */
export const RESPONSE_BODY_LIMIT = 16 * 1024

/** Truncates a response body to the 16 KiB the attempt log keeps. */
export function truncateBody(body: string | null | undefined): string | null {
  if (body === null || body === undefined) return null
  if (body.length <= RESPONSE_BODY_LIMIT) return body
  return body.slice(0, RESPONSE_BODY_LIMIT)
}

/** The lease margin: a request is never re-claimed while in flight (docs/delivery.md, >= 15 s). */
export const LEASE_MARGIN_MS = 30_000

/** The lease margin a claim uses: its `leaseMarginMs` (LEASE_MARGIN_MS when absent), never under 15 s. */
export const leaseMarginOf = (opts: Pick<ClaimOptions, 'leaseMarginMs'>): number => Math.max(opts.leaseMarginMs ?? LEASE_MARGIN_MS, 15_000)

/** A claim's fresh token, one for all its rows (docs/delivery.md, "The queue"): the owner, then 24 random hex digits. */
export const newClaimToken = (opts: Pick<ClaimOptions, 'owner'>): string => (opts.owner ?? '') + randomBytes(12).toString('hex')

/**
 * At most this many endpoints with pending rows one claim's second path looks at (~2 µs each);
 * the next claim goes on from there. So with thousands of endpoints holding scheduled retries a
 * claim costs at most ~0.7 ms, and an endpoint far round the ring waits a few claims more.
 */
export const PASS_ENDPOINTS = 256

/** DUE_KEY of a row in code: its endpoint, its request origin, or `#<channel>`. */
export const dueKey = (row: { endpointId?: string | null; targetKey?: string | null; channel: string }): string =>
  row.endpointId ?? row.targetKey ?? channelKey(row.channel)

/** The key under which the requests to one origin take slots and turns (a row's target_key). */
export const originKey = (origin: string): string => `@${origin}`

/** The key under which a channel's rows without an endpoint take slots and turns. */
export const channelKey = (channel: string): string => `#${channel}`
