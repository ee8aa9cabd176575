import { type StreamEvent } from './inbox-types.js'
/** Retention periods (docs/operations.md) and the sweep's batch size. */
export interface RetentionOptions {
  now: number
  /** Successful deliveries (and their attempts) older than this, by completed_at, go. */
  successMs: number
  /** Dead and cancelled deliveries older than this, by completed_at, go. */
  deadMs: number
  /** Inbox messages older than this, by created_at, go. */
  inboxMs: number
  /** Events, and notifications, with no remaining deliveries older than this, by created_at, go. */
  eventsMs: number
  /** Rows per transaction; default 1,000 (docs/operations.md). */
  batchSize?: number
  /**
   * Called after each committed batch for every user whose unread count it lowered, with the
   * `unread_count` event it logged (needs `store.inbox`), so live streams can be told.
   */
  onStreamEvents?: (userId: string, events: StreamEvent[]) => void
}

/** What one sweep deleted, how many transactions each family took, and how much it read. */
export interface RetentionResult {
  deliveries: number
  events: number
  notifications: number
  inboxMessages: number
  batches: { deliveries: number; events: number; notifications: number; inboxMessages: number }
  /** Rows the keyset walks read, kept ones included: what a remembered position saves. */
  read: { deliveries: number; events: number; notifications: number }
  /** True when every walk started from the beginning (always, for `sweepRetention`). */
  full: boolean
}

/** The default number of rows deleted per transaction (docs/operations.md). */
export const RETENTION_BATCH_SIZE = 1000
