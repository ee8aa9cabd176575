import { type Delivery, type DeliveryStatus } from './deliveries.js'
import { type Page } from '../lib/cursor.js'
/** What a request sends, as stored. */
export interface RequestTarget {
  method: string
  url: string
  /** Custom headers as accepted (validated, none of Postbox's own). */
  headers: Record<string, string>
  /** The bytes sent on every attempt; null = no body. */
  body: string | null
  /** True when `body` is JSON (sent as application/json). */
  bodyJson: boolean
  signingSecret: string | null
  timeoutMs: number
  /** Retry delays in ms; null = the global schedule. */
  retrySchedule: number[] | null
}

/** A stored request: its target, its labels and its delivery row. */
export interface RequestRow extends RequestTarget {
  /** `req_…` */
  id: string
  appId: string
  source: string | null
  refId: string | null
  dedupKey: string | null
  deliverAt: number
  createdAt: number
  delivery: Delivery
}

/** What `create` stores. */
export interface NewRequest extends RequestTarget {
  appId: string
  source: string | null
  refId: string | null
  dedupKey: string | null
  /** When the first attempt is due (now or later). */
  deliverAt: number
  /** The origin key its rows take slots under (`@<origin>`, see DUE_KEY). */
  targetKey: string
  maxAttempts: number
}

/** Filters of `list`. */
export interface RequestFilter {
  status?: DeliveryStatus
  source?: string
  refId?: string
  appId?: string
  limit: number
  cursor?: string | null
}

/** The public id of a request delivery. */
export const requestIdOf = (deliveryId: string): string => `req_${deliveryId.slice(4)}`

/** The delivery id behind a public request id; null when `id` is not one. */
export const deliveryIdOf = (id: string): string | null => (/^req_[0-9a-z]{26}$/.test(id) ? `dlv_${id.slice(4)}` : null)

/** The requests table and the operations on request deliveries. */
export interface RequestsStore {
  /**
   * Enqueues the request's delivery and stores its target, inside the caller's transaction; a
   * repeat of `(appId, dedupKey)` stores nothing and returns the original's delivery id.
   */
  create(req: NewRequest, now: number): { deliveryId: string; created: boolean }
  /** The target of a request delivery, for the sender; null when the row is gone. */
  target(deliveryId: string): RequestTarget | null
  get(deliveryId: string): RequestRow | null
  list(f: RequestFilter): Page<RequestRow>
  /** Cancels a pending request: `ok`, `not_found`, or `not_eligible` (in flight or finished). */
  cancel(deliveryId: string, now: number): 'ok' | 'not_found' | 'not_eligible'
  /** Cancels every pending request of a deleted application (last_error `app_deleted`); how many. */
  cancelForApp(appId: string, now: number): number
  /** True when the delivery is a request's. */
  isRequest(deliveryId: string): boolean
  /** Request deliveries per status: a pass over the table, for `postbox stats`. */
  countByStatus(): Record<DeliveryStatus, number>
}
