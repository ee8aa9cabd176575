import { type InboxMessage, type NewInboxMessage, type StreamEvent } from './inbox-types.js'
export type { InboxMessage, NewInboxMessage, RawMessage, StreamEvent, InboxMessageJson } from './inbox-types.js'
export { messageJson, STREAM_LOG_SIZE } from './inbox-types.js'

/** A state change a user may apply to their own messages by id. */
export type InboxStateChange = 'read' | 'unread' | 'seen' | 'archive' | 'unarchive' | 'clicked' | 'unsnooze'

/** A bulk change by filter. */
export type InboxBulkChange = 'read_all' | 'seen_all' | 'archive_all'

/** The filter of a bulk change or of counts; every field optional (all messages when empty). */
export interface InboxSelection {
  topic?: string | null
  tags?: readonly string[] | null
  appId?: string | null
  read?: boolean | null
}

/** Filters of an inbox list. */
export interface InboxFilter {
  status: 'unread' | 'read' | 'all'
  archived: boolean
  /** True lists the snoozed messages (hidden from every other list). */
  snoozed?: boolean
  topic?: string
  /** Messages with any of these tags. */
  tags?: readonly string[]
  appId?: string | null
  limit: number
  cursor?: string | null
}

/** Counts of the visible (non-archived, non-snoozed) messages of a selection. */
export interface InboxCounts {
  unreadCount: number
  unseenCount: number
  total: number
}

/** What a change did: how many messages changed, and the stream events it logged (push them after commit). */
export interface ChangeResult {
  updated: number
  events: StreamEvent[]
}

/** Inbox messages, their exact counts and the per-user stream log. */
export interface InboxStore {
  /** Appends an `unread_count` event with the user's current count (after retention lowered it). */
  logUnreadCount(userId: string, now: number): StreamEvent
  /** Writes a message once per delivery id; returns the stream events it appended (none on a repeat). */
  insertMessage(input: NewInboxMessage, now: number): { message: InboxMessage; created: boolean; events: StreamEvent[] }
  /**
   * Writes many messages: one counter statement for all users, the messages 50 rows per
   * statement, each carrying its two stream event ids, so nothing goes to the stream log.
   * Repeats of a delivery id are skipped. Returns the new events per user, in order.
   */
  insertMessages(inputs: readonly NewInboxMessage[], now: number): Map<string, StreamEvent[]>
  /** Newest first (arrival order); the cursor is the last row's position. */
  list(userId: string, filter: InboxFilter): { data: InboxMessage[]; nextCursor: string | null }
  /** The user's unread count over every app (the stream's `unread_count`). */
  unreadCount(userId: string): number
  /** Exact counts of the selection, and of each of `tags` within it. */
  counts(userId: string, sel: { topic?: string | null; appId?: string | null }, tags: readonly string[]): { all: InboxCounts; byTag: Map<string, InboxCounts> }
  /** Applies a state change to the user's own messages among `ids` (of `appId` only, when given); other ids are ignored. */
  changeState(userId: string, appId: string | null, ids: readonly string[], change: InboxStateChange, now: number): ChangeResult
  /** Snoozes the user's own messages among `ids` until `until`. */
  snooze(userId: string, appId: string | null, ids: readonly string[], until: number, now: number): ChangeResult
  /** A bulk change over the messages the selection matches. */
  bulk(userId: string, change: InboxBulkChange, sel: InboxSelection, now: number): ChangeResult
  /** The earliest snoozed_until of any message, or null. */
  nextWake(): number | null
  /** Wakes up to `limit` messages whose snooze ended by `now`: unread again, logged as `notification` events. Per user. */
  wakeDue(now: number, limit?: number): Map<string, StreamEvent[]>
  /** A message by id, or null. */
  get(id: string): InboxMessage | null
  /** The message a notification left in a user's inbox, or null. */
  messageOf(notificationId: string, userId: string): string | null
  /** Events with seq > `afterSeq` among the user's last STREAM_LOG_SIZE (log rows and message events), oldest first. */
  replay(userId: string, afterSeq: number, limit?: number): StreamEvent[]
  lastSeq(userId: string): number
}
