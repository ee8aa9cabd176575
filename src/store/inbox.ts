import type { Statement } from 'better-sqlite3'
import { prepareAll, statementCache, type Db } from './db.js'
import { newId } from '../lib/ids.js'
import { toIso } from '../lib/clock.js'
import { decodeInboxCursor, encodeCursor } from '../lib/cursor.js'
import { parseJsonOr } from '../lib/json.js'
import { createReplay, STREAM_LOG_SIZE } from './inbox-replay.js'
import { SCAN_STATEMENT_LIMIT, scanForPage } from './capped-scan.js'

/** An inbox message, mapped to camelCase. */
export interface InboxMessage {
  id: string
  userId: string
  notificationId: string | null
  deliveryId: string | null
  topic: string
  title: string
  body: string
  severity: string
  actionUrl: string | null
  payload: Record<string, unknown> | null
  seen: boolean
  read: boolean
  archived: boolean
  createdAt: number
}

/** What an inbox delivery writes: a message before it has an id, state or time. */
export type NewInboxMessage = Omit<InboxMessage, 'id' | 'seen' | 'read' | 'archived' | 'createdAt'>

/** One entry of a user's durable stream log; `seq` is the per-user SSE event id. */
export interface StreamEvent {
  seq: number
  kind: 'notification' | 'state' | 'unread_count'
  data: Record<string, unknown>
}

/** A state change a user may apply to their own messages. */
export type InboxStateChange = 'read' | 'unread' | 'seen' | 'archive' | 'unarchive'

/** Filters of an inbox list. */
export interface InboxFilter {
  status: 'unread' | 'read' | 'all'
  archived: boolean
  topic?: string
  limit: number
  cursor?: string | null
}

export { STREAM_LOG_SIZE } from './inbox-replay.js'

const COLUMNS = `id, user_id AS userId, notification_id AS notificationId, delivery_id AS deliveryId, topic, title, body,
  severity, action_url AS actionUrl, payload, seen, read, archived, created_at AS createdAt`

const INSERT_COLUMNS = `INSERT INTO inbox_messages (id, user_id, notification_id, delivery_id, topic, title, body, severity,
    action_url, payload, created_at, seq, unread_after) VALUES`
const MESSAGE_WIDTH = 13
const MESSAGE_VALUES = `(${Array(MESSAGE_WIDTH).fill('?').join(', ')})`
/**
 * A batch inserts its messages this many rows per statement. Multi-row VALUES measured ~35%
 * faster than json_each (which re-parses each row's array once per column) and than one
 * statement per row; 50 rows × 13 parameters stays far below SQLite's parameter limit.
 */
const MESSAGES_PER_INSERT = 50

/** The inbox store's fixed statements by name (exported for the query-plan test). */
export const INBOX_SQL = {
  insert: `${INSERT_COLUMNS} ${MESSAGE_VALUES}`,
  insertChunk: `${INSERT_COLUMNS} ${Array(MESSAGES_PER_INSERT).fill(MESSAGE_VALUES).join(', ')}`,
  byDelivery: `SELECT ${COLUMNS} FROM inbox_messages WHERE delivery_id = ?`,
  addUnread: `INSERT INTO inbox_counters (user_id, unread_count, last_seq) VALUES (@userId, max(@delta, 0), 0)
    ON CONFLICT (user_id) DO UPDATE SET unread_count = max(unread_count + @delta, 0) RETURNING unread_count`,
  unread: `SELECT unread_count FROM inbox_counters WHERE user_id = ?`,
  existing: `SELECT delivery_id FROM inbox_messages WHERE delivery_id IN (SELECT value FROM json_each(?))`,
  countNew: `INSERT INTO inbox_counters (user_id, unread_count, last_seq)
    SELECT value->>0, value->>1, 2 * (value->>1) FROM json_each(@users) WHERE true
    ON CONFLICT (user_id) DO UPDATE SET unread_count = unread_count + excluded.unread_count,
      last_seq = last_seq + excluded.last_seq
    RETURNING user_id AS userId, unread_count AS unread, last_seq AS seq`,
  newMessage: `INSERT INTO inbox_counters (user_id, unread_count, last_seq) VALUES (?, 1, 2)
    ON CONFLICT (user_id) DO UPDATE SET unread_count = unread_count + 1, last_seq = last_seq + 2
    RETURNING unread_count AS unread, last_seq AS seq`,
  nextSeq: `INSERT INTO inbox_counters (user_id, unread_count, last_seq) VALUES (?, 0, 1)
    ON CONFLICT (user_id) DO UPDATE SET last_seq = last_seq + 1 RETURNING last_seq`,
  lastSeq: `SELECT last_seq FROM inbox_counters WHERE user_id = ?`,
  appendEvent: `INSERT INTO inbox_stream (user_id, seq, kind, data, created_at) VALUES (?, ?, ?, ?, ?)`,
  trim: `DELETE FROM inbox_stream WHERE user_id = ? AND seq <= ?`,
  positionOf: `SELECT rowid FROM inbox_messages WHERE id = ? AND user_id = ?`,
  // State changes by id: `+user_id` keeps the owner check but stops SQLite from choosing the
  // per-user index, which walked the user's whole inbox (~0.7 µs per message) for a few ids.
  read: `UPDATE inbox_messages SET read = 1, seen = 1 WHERE +user_id = @userId AND read = 0
      AND id IN (SELECT value FROM json_each(@ids)) RETURNING id, archived = 0 AS counts`,
  unreadState: `UPDATE inbox_messages SET read = 0 WHERE +user_id = @userId AND read = 1
      AND id IN (SELECT value FROM json_each(@ids)) RETURNING id, archived = 0 AS counts`,
  seen: `UPDATE inbox_messages SET seen = 1 WHERE +user_id = @userId AND seen = 0
      AND id IN (SELECT value FROM json_each(@ids)) RETURNING id, 0 AS counts`,
  archive: `UPDATE inbox_messages SET archived = 1 WHERE +user_id = @userId AND archived = 0
      AND id IN (SELECT value FROM json_each(@ids)) RETURNING id, read = 0 AS counts`,
  unarchive: `UPDATE inbox_messages SET archived = 0 WHERE +user_id = @userId AND archived = 1
      AND id IN (SELECT value FROM json_each(@ids)) RETURNING id, read = 0 AS counts`,
  readAll: `UPDATE inbox_messages SET read = 1, seen = 1 WHERE user_id = @userId AND read = 0
      RETURNING id, archived = 0 AS counts`,
} as const

/** Per state change: the statement, and whether each touched (counting) row adds or removes an unread. */
const CHANGES: Record<InboxStateChange, { sql: keyof typeof INBOX_SQL; delta: -1 | 0 | 1 }> = {
  read: { sql: 'read', delta: -1 },
  unread: { sql: 'unreadState', delta: 1 },
  seen: { sql: 'seen', delta: 0 },
  archive: { sql: 'archive', delta: -1 },
  unarchive: { sql: 'unarchive', delta: 1 },
}

/** A message row as SQLite returns it (flags as 0/1, payload as JSON text). */
export type RawMessage = Omit<InboxMessage, 'payload' | 'seen' | 'read' | 'archived'> & {
  payload: string | null
  seen: number
  read: number
  archived: number
}

const mapMessage = (r: RawMessage): InboxMessage => ({
  ...r,
  payload: parseJsonOr<Record<string, unknown> | null>(r.payload, null),
  seen: r.seen === 1,
  read: r.read === 1,
  archived: r.archived === 1,
})

/** The wire shape of a message (docs/notifications-basics.md list item); also what the stream log stores. */
export function messageJson(m: InboxMessage): Record<string, unknown> {
  return {
    id: m.id,
    topic: m.topic,
    title: m.title,
    body: m.body,
    severity: m.severity,
    action_url: m.actionUrl,
    seen: m.seen,
    read: m.read,
    archived: m.archived,
    created_at: toIso(m.createdAt),
  }
}

// Fields listed one by one: building the message with `{ ...m, id, … }` measured ~4 µs per
// message more (1,000 per fan-out) than this literal.
const newMessage = (m: NewInboxMessage, now: number): InboxMessage => ({
  id: newId('msg', now),
  userId: m.userId,
  notificationId: m.notificationId,
  deliveryId: m.deliveryId,
  topic: m.topic,
  title: m.title,
  body: m.body,
  severity: m.severity,
  actionUrl: m.actionUrl,
  payload: m.payload,
  seen: false,
  read: false,
  archived: false,
  createdAt: now,
})

/** The two stream events of a new message: `notification` at `seq`, `unread_count` at seq + 1. */
const messageEvents = (m: InboxMessage, seq: number, unread: number): StreamEvent[] => [
  { seq, kind: 'notification', data: messageJson(m) },
  { seq: seq + 1, kind: 'unread_count', data: { unread_count: unread } },
]

/** Inbox messages, the exact unread counter and the per-user stream log. */
export interface InboxStore {
  /** Appends an `unread_count` event with the user's current count (after retention lowered it). */
  logUnreadCount(userId: string, now: number): StreamEvent
  /** Writes a message once per delivery id; returns the stream events it appended (none on a repeat). */
  insertMessage(input: NewInboxMessage, now: number): { message: InboxMessage; created: boolean; events: StreamEvent[] }
  /**
   * Writes many messages (the inbox channel's batch): one counter statement for all users, the
   * messages 50 rows per statement, each carrying its two stream event ids, so nothing goes to
   * the stream log. Repeats of a delivery id are skipped. Returns the new events per user, in order.
   */
  insertMessages(inputs: readonly NewInboxMessage[], now: number): Map<string, StreamEvent[]>
  /** Newest first (arrival order); the cursor is the last row's position. */
  list(userId: string, filter: InboxFilter): { data: InboxMessage[]; nextCursor: string | null; unreadCount: number }
  unreadCount(userId: string): number
  /** Applies a state change to the user's own messages among `ids`; other users' ids are ignored. */
  changeState(userId: string, ids: readonly string[], change: InboxStateChange, now: number): { updated: number; events: StreamEvent[] }
  readAll(userId: string, now: number): { updated: number; events: StreamEvent[] }
  /** Events with seq > `afterSeq` among the user's last STREAM_LOG_SIZE (log rows and message events), oldest first. */
  replay(userId: string, afterSeq: number, limit?: number): StreamEvent[]
  lastSeq(userId: string): number
}

/**
 * Wraps `fn` in an IMMEDIATE transaction, or runs it as is inside the caller's transaction:
 * a savepoint per message would double the statements of a 1,000-recipient inbox batch.
 */
function inTx<A extends unknown[], R>(db: Db, fn: (...args: A) => R): (...args: A) => R {
  const tx = db.transaction(fn)
  return (...args) => (db.inTransaction ? fn(...args) : tx.immediate(...args))
}

/** Creates the inbox store over a connection. Every write runs in one transaction with its counter and log. */
export function createInboxStore(db: Db): InboxStore {
  const s = prepareAll(db, INBOX_SQL)
  const addUnread = s.addUnread.pluck()
  const unread = s.unread.pluck()
  const nextSeq = s.nextSeq.pluck()
  const lastSeqStmt = s.lastSeq.pluck()
  const lastSeq = (userId: string): number => (lastSeqStmt.get(userId) as number | undefined) ?? 0
  const unreadOf = (userId: string): number => (unread.get(userId) as number | undefined) ?? 0
  const existing = s.existing.pluck()
  const positionOf = s.positionOf.pluck()

  /** Appends one state-change event to the durable log, keeping the user's last STREAM_LOG_SIZE. */
  const log = (userId: string, seq: number, kind: StreamEvent['kind'], data: Record<string, unknown>, now: number): StreamEvent => {
    s.appendEvent.run(userId, seq, kind, JSON.stringify(data), now)
    if (seq > STREAM_LOG_SIZE) s.trim.run(userId, seq - STREAM_LOG_SIZE)
    return { seq, kind, data }
  }
  const append = (userId: string, kind: StreamEvent['kind'], data: Record<string, unknown>, now: number): StreamEvent =>
    log(userId, nextSeq.get(userId) as number, kind, data, now)
  const finish = (
    userId: string,
    rows: { id: string; counts: number }[],
    delta: number,
    state: Record<string, unknown>,
    now: number,
  ) => {
    const events: StreamEvent[] = []
    if (rows.length === 0) return { updated: 0, events }
    events.push(append(userId, 'state', state, now))
    const counted = rows.filter((r) => r.counts === 1).length
    if (delta !== 0 && counted > 0) {
      const count = addUnread.get({ userId, delta: delta * counted }) as number
      events.push(append(userId, 'unread_count', { unread_count: count }, now))
    }
    return { updated: rows.length, events }
  }

  const insertTx = inTx(db, (input: NewInboxMessage, now: number) => {
    if (input.deliveryId !== null) {
      const prior = s.byDelivery.get(input.deliveryId) as RawMessage | undefined
      if (prior) return { message: mapMessage(prior), created: false, events: [] }
    }
    // One counter statement for both: unread + 1 and two stream sequence numbers.
    const { unread, seq } = s.newMessage.get(input.userId) as { unread: number; seq: number }
    const m = newMessage(input, now)
    const payload = m.payload ? JSON.stringify(m.payload) : null
    s.insert.run(
      m.id, m.userId, m.notificationId, m.deliveryId, m.topic, m.title, m.body, m.severity, m.actionUrl, payload, now, seq - 1, unread,
    )
    return { message: m, created: true, events: messageEvents(m, seq - 1, unread) }
  })
  const insertManyTx = inTx(db, (inputs: readonly NewInboxMessage[], now: number) => {
    // A delivery already written (a re-claim after a crash between write and settle) or twice
    // in the batch is skipped before any counter moves, so unread counts stay exact.
    const ids = inputs.flatMap((m) => (m.deliveryId === null ? [] : [m.deliveryId]))
    const skip = new Set(existing.all(JSON.stringify(ids)) as string[])
    const byUser = new Map<string, NewInboxMessage[]>()
    for (const m of inputs) {
      if (m.deliveryId !== null) {
        if (skip.has(m.deliveryId)) continue
        skip.add(m.deliveryId)
      }
      const list = byUser.get(m.userId)
      if (list) list.push(m)
      else byUser.set(m.userId, [m])
    }
    const out = new Map<string, StreamEvent[]>()
    if (byUser.size === 0) return out
    const users: [string, number][] = []
    for (const [u, list] of byUser) users.push([u, list.length])
    const counters = s.countNew.all({ users: JSON.stringify(users) }) as { userId: string; unread: number; seq: number }[]
    const rows: unknown[] = []
    for (const c of counters) {
      const list = byUser.get(c.userId)!
      // The batch took 2 sequence numbers and 1 unread per message: hand them out in order.
      const firstSeq = c.seq - 2 * list.length + 1
      const firstUnread = c.unread - list.length + 1
      const events: StreamEvent[] = []
      for (let k = 0; k < list.length; k++) {
        const m = newMessage(list[k]!, now)
        const seq = firstSeq + 2 * k
        const unread = firstUnread + k
        rows.push(
          m.id, m.userId, m.notificationId, m.deliveryId, m.topic, m.title, m.body, m.severity, m.actionUrl,
          m.payload ? JSON.stringify(m.payload) : null, now, seq, unread,
        )
        events.push(...messageEvents(m, seq, unread))
      }
      out.set(c.userId, events)
    }
    const chunk = MESSAGES_PER_INSERT * MESSAGE_WIDTH
    let at = 0
    for (; at + chunk <= rows.length; at += chunk) s.insertChunk.run(rows.slice(at, at + chunk))
    for (; at < rows.length; at += MESSAGE_WIDTH) s.insert.run(rows.slice(at, at + MESSAGE_WIDTH))
    return out
  })
  const statement = statementCache(db)
  const listStatement = (where: string): Statement =>
    statement(`SELECT rowid AS pos, ${COLUMNS} FROM inbox_messages WHERE ${where} ORDER BY rowid DESC LIMIT ?`)
  // A topic filter has no index (one per fan-out recipient would cost every notification): a
  // page reads the user's messages, at most LIST_SCAN_LIMIT of them, and continues from there.
  // Read messages have no index of their own either: with a topic, `read = 1` is checked with it,
  // so the cap counts every message the page reads.
  const topicScan = (where: string, readOnly: boolean): Statement =>
    statement(
      `SELECT rowid, topic = ?${readOnly ? ' AND read = 1' : ''} AS hit FROM inbox_messages WHERE ${where} ORDER BY rowid DESC LIMIT ${SCAN_STATEMENT_LIMIT}`,
    ).raw(true)
  const byPositions = db.prepare(`SELECT rowid AS pos, ${COLUMNS} FROM inbox_messages WHERE rowid IN (SELECT value FROM json_each(?)) ORDER BY rowid DESC`)
  /** The page's rows (one more than `limit` when another page follows), and where a cut-short read stopped. */
  const pageRows = (where: string, params: unknown[], f: InboxFilter): { rows: (RawMessage & { pos: number })[]; resumeAfter: number | null } => {
    if (!f.topic) return { rows: listStatement(where).all(...params, f.limit + 1) as (RawMessage & { pos: number })[], resumeAfter: null }
    const scan = topicScan(where, f.status === 'read')
    const { hits, resumeAfter } = scanForPage(scan.iterate(f.topic, ...params) as IterableIterator<[number, number]>, f.limit)
    return { rows: hits.length === 0 ? [] : (byPositions.all(JSON.stringify(hits)) as (RawMessage & { pos: number })[]), resumeAfter }
  }
  /** A list cursor's position: a rowid, or (a cursor made before v3) the id of the user's message. */
  const position = (userId: string, key: string | null): number | null => {
    if (key === null) return null
    if (/^\d{1,15}$/.test(key)) return Number(key)
    return (positionOf.get(key, userId) as number | undefined) ?? null
  }

  const changeTx = inTx(db, (userId: string, ids: readonly string[], change: InboxStateChange, now: number) => {
    const { sql, delta } = CHANGES[change]
    const rows = s[sql].all({ userId, ids: JSON.stringify(ids) }) as { id: string; counts: number }[]
    return finish(userId, rows, delta, { change, ids: rows.map((r) => r.id) }, now)
  })
  const readAllTx = inTx(db, (userId: string, now: number) => {
    const rows = s.readAll.all({ userId }) as { id: string; counts: number }[]
    // A read-all event names no ids (there may be thousands): clients mark everything read.
    return finish(userId, rows, -1, { change: 'read_all' }, now)
  })

  return {
    insertMessage: insertTx,
    insertMessages: (inputs, now) => (inputs.length === 0 ? new Map() : insertManyTx(inputs, now)),
    list(userId, f) {
      const where = ['user_id = ?', 'archived = ?']
      const params: unknown[] = [userId, f.archived ? 1 : 0]
      if (f.status === 'unread') where.push('read = 0')
      else if (f.status === 'read' && !f.topic) where.push('read = 1')
      const after = position(userId, decodeInboxCursor(f.cursor))
      if (after !== null) {
        where.push('rowid < ?')
        params.push(after)
      }
      const { rows, resumeAfter } = pageRows(where.join(' AND '), params, f)
      const more = rows.length > f.limit
      const page = more ? rows.slice(0, f.limit) : rows
      const next = more ? page[page.length - 1]!.pos : resumeAfter
      return {
        data: page.map(({ pos: _, ...r }) => mapMessage(r)),
        nextCursor: next === null ? null : encodeCursor(String(next)),
        unreadCount: unreadOf(userId),
      }
    },
    unreadCount: unreadOf,
    changeState: (userId, ids, change, now) =>
      ids.length === 0 ? { updated: 0, events: [] } : changeTx(userId, ids, change, now),
    readAll: readAllTx,
    replay: createReplay(db, lastSeq, (r) => messageJson(mapMessage(r))),
    logUnreadCount: (userId, now) => append(userId, 'unread_count', { unread_count: unreadOf(userId) }, now),
    lastSeq,
  }
}
