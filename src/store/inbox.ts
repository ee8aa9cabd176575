import type { Statement } from 'better-sqlite3'
import type { Db } from './db.js'
import { newId } from '../lib/ids.js'
import { toIso } from '../lib/clock.js'
import { decodeCursor, encodeCursor } from '../lib/cursor.js'
import { parseJsonOr } from '../lib/json.js'

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

/** The stream log keeps this many events per user for Last-Event-ID replay (SPEC §6). */
export const STREAM_LOG_SIZE = 1000

const COLUMNS = `id, user_id AS userId, notification_id AS notificationId, delivery_id AS deliveryId, topic, title, body,
  severity, action_url AS actionUrl, payload, seen, read, archived, created_at AS createdAt`

const SQL = {
  insert: `INSERT INTO inbox_messages (id, user_id, notification_id, delivery_id, topic, title, body, severity, action_url,
      payload, created_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (delivery_id) DO NOTHING`,
  byDelivery: `SELECT ${COLUMNS} FROM inbox_messages WHERE delivery_id = ?`,
  addUnread: `INSERT INTO inbox_counters (user_id, unread_count, last_seq) VALUES (@userId, max(@delta, 0), 0)
    ON CONFLICT (user_id) DO UPDATE SET unread_count = max(unread_count + @delta, 0) RETURNING unread_count`,
  unread: `SELECT unread_count FROM inbox_counters WHERE user_id = ?`,
  insertMany: `INSERT INTO inbox_messages (id, user_id, notification_id, delivery_id, topic, title, body, severity, action_url,
      payload, created_at)
    SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7, value->>8, value->>9, @now
      FROM json_each(@rows) WHERE true
    ON CONFLICT (delivery_id) DO NOTHING RETURNING id`,
  countNew: `INSERT INTO inbox_counters (user_id, unread_count, last_seq)
    SELECT value->>0, value->>1, 2 * (value->>1) FROM json_each(@users) WHERE true
    ON CONFLICT (user_id) DO UPDATE SET unread_count = unread_count + excluded.unread_count,
      last_seq = last_seq + excluded.last_seq
    RETURNING user_id AS userId, unread_count AS unread, last_seq AS seq`,
  logMany: `INSERT INTO inbox_stream (user_id, seq, kind, data, created_at)
    SELECT value->>0, value->>1, value->>2, value->>3, @now FROM json_each(@events)`,
  newMessage: `INSERT INTO inbox_counters (user_id, unread_count, last_seq) VALUES (?, 1, 2)
    ON CONFLICT (user_id) DO UPDATE SET unread_count = unread_count + 1, last_seq = last_seq + 2
    RETURNING unread_count AS unread, last_seq AS seq`,
  nextSeq: `INSERT INTO inbox_counters (user_id, unread_count, last_seq) VALUES (?, 0, 1)
    ON CONFLICT (user_id) DO UPDATE SET last_seq = last_seq + 1 RETURNING last_seq`,
  lastSeq: `SELECT last_seq FROM inbox_counters WHERE user_id = ?`,
  appendEvent: `INSERT INTO inbox_stream (user_id, seq, kind, data, created_at) VALUES (?, ?, ?, ?, ?)`,
  trim: `DELETE FROM inbox_stream WHERE user_id = ? AND seq <= ?`,
  replay: `SELECT e.seq, e.kind, e.data, m.id AS msgId, m.topic, m.title, m.body, m.severity, m.action_url AS actionUrl,
      m.seen, m.read, m.archived, m.created_at AS createdAt
    FROM inbox_stream e LEFT JOIN inbox_messages m ON e.kind = 'notification' AND m.id = e.data
    WHERE e.user_id = ? AND e.seq > ? ORDER BY e.seq LIMIT ?`,
  read: `UPDATE inbox_messages SET read = 1, seen = 1 WHERE user_id = @userId AND read = 0
      AND id IN (SELECT value FROM json_each(@ids)) RETURNING id, archived = 0 AS counts`,
  unreadState: `UPDATE inbox_messages SET read = 0 WHERE user_id = @userId AND read = 1
      AND id IN (SELECT value FROM json_each(@ids)) RETURNING id, archived = 0 AS counts`,
  seen: `UPDATE inbox_messages SET seen = 1 WHERE user_id = @userId AND seen = 0
      AND id IN (SELECT value FROM json_each(@ids)) RETURNING id, 0 AS counts`,
  archive: `UPDATE inbox_messages SET archived = 1 WHERE user_id = @userId AND archived = 0
      AND id IN (SELECT value FROM json_each(@ids)) RETURNING id, read = 0 AS counts`,
  unarchive: `UPDATE inbox_messages SET archived = 0 WHERE user_id = @userId AND archived = 1
      AND id IN (SELECT value FROM json_each(@ids)) RETURNING id, read = 0 AS counts`,
  readAll: `UPDATE inbox_messages SET read = 1, seen = 1 WHERE user_id = @userId AND read = 0
      RETURNING id, archived = 0 AS counts`,
} as const

type ReplayRow = { seq: number; kind: StreamEvent['kind']; data: string; msgId: string | null } & Omit<
  RawMessage,
  'id' | 'userId' | 'notificationId' | 'deliveryId' | 'payload'
>

const replayMessage = (r: ReplayRow, userId: string): InboxMessage =>
  mapMessage({ ...r, id: r.msgId!, userId, notificationId: null, deliveryId: null, payload: null })

/** Per state change: the statement, and whether each touched (counting) row adds or removes an unread. */
const CHANGES: Record<InboxStateChange, { sql: keyof typeof SQL; delta: -1 | 0 | 1 }> = {
  read: { sql: 'read', delta: -1 },
  unread: { sql: 'unreadState', delta: 1 },
  seen: { sql: 'seen', delta: 0 },
  archive: { sql: 'archive', delta: -1 },
  unarchive: { sql: 'unarchive', delta: 1 },
}

type RawMessage = Omit<InboxMessage, 'payload' | 'seen' | 'read' | 'archived'> & {
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

/** The wire shape of a message (SPEC §6 list item); also what the stream log stores. */
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

/** Inbox messages, the exact unread counter and the per-user stream log. */
export interface InboxStore {
  /** Writes a message once per delivery id; returns the stream events it appended (none on a repeat). */
  insertMessage(input: NewInboxMessage, now: number): { message: InboxMessage; created: boolean; events: StreamEvent[] }
  /**
   * Writes many messages with one statement per table (the inbox channel's batch); repeats of a
   * delivery id are skipped. Returns the appended stream events per user, in order.
   */
  insertMessages(inputs: readonly NewInboxMessage[], now: number): Map<string, StreamEvent[]>
  list(userId: string, filter: InboxFilter): { data: InboxMessage[]; nextCursor: string | null; unreadCount: number }
  unreadCount(userId: string): number
  /** Applies a state change to the user's own messages among `ids`; other users' ids are ignored. */
  changeState(userId: string, ids: readonly string[], change: InboxStateChange, now: number): { updated: number; events: StreamEvent[] }
  readAll(userId: string, now: number): { updated: number; events: StreamEvent[] }
  /** Logged events with seq > `afterSeq`, oldest first. */
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
  const s = Object.fromEntries(Object.entries(SQL).map(([k, v]) => [k, db.prepare(v)])) as {
    [K in keyof typeof SQL]: Statement
  }
  const addUnread = db.prepare(SQL.addUnread).pluck()
  const unread = db.prepare(SQL.unread).pluck()
  const nextSeq = db.prepare(SQL.nextSeq).pluck()
  const lastSeq = db.prepare(SQL.lastSeq).pluck()

  /**
   * Appends one event to the durable log. A notification event stores only its message id
   * (the message row holds the rest), so a large body is not written twice.
   */
  const log = (userId: string, seq: number, kind: StreamEvent['kind'], data: Record<string, unknown>, now: number): StreamEvent => {
    s.appendEvent.run(userId, seq, kind, kind === 'notification' ? (data.id as string) : JSON.stringify(data), now)
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
    const message: InboxMessage = { ...input, id: newId('msg', now), seen: false, read: false, archived: false, createdAt: now }
    const m = message
    const payload = m.payload ? JSON.stringify(m.payload) : null
    const inserted = s.insert.run(m.id, m.userId, m.notificationId, m.deliveryId, m.topic, m.title, m.body, m.severity, m.actionUrl, payload, now)
    if (inserted.changes === 0) {
      return { message: mapMessage(s.byDelivery.get(input.deliveryId) as RawMessage), created: false, events: [] }
    }
    // One counter statement for both: unread + 1 and two stream sequence numbers.
    const { unread, seq } = s.newMessage.get(input.userId) as { unread: number; seq: number }
    const events = [
      log(input.userId, seq - 1, 'notification', messageJson(message), now),
      log(input.userId, seq, 'unread_count', { unread_count: unread }, now),
    ]
    return { message, created: true, events }
  })
  const insertManyTx = inTx(db, (inputs: readonly NewInboxMessage[], now: number) => {
    const messages = inputs.map(
      (m): InboxMessage => ({ ...m, id: newId('msg', now), seen: false, read: false, archived: false, createdAt: now }),
    )
    const rows = messages.map((m) => [
      m.id, m.userId, m.notificationId, m.deliveryId, m.topic, m.title, m.body, m.severity, m.actionUrl,
      m.payload ? JSON.stringify(m.payload) : null,
    ])
    const inserted = new Set((s.insertMany.all({ rows: JSON.stringify(rows), now }) as { id: string }[]).map((r) => r.id))
    const byUser = new Map<string, InboxMessage[]>()
    for (const m of messages) {
      if (!inserted.has(m.id)) continue
      const list = byUser.get(m.userId)
      if (list) list.push(m)
      else byUser.set(m.userId, [m])
    }
    const out = new Map<string, StreamEvent[]>()
    if (byUser.size === 0) return out
    const counters = s.countNew.all({ users: JSON.stringify([...byUser].map(([u, list]) => [u, list.length])) }) as {
      userId: string
      unread: number
      seq: number
    }[]
    const logRows: unknown[][] = []
    for (const c of counters) {
      const list = byUser.get(c.userId)!
      // The batch took 2 sequence numbers and 1 unread per message: hand them out in order.
      const firstSeq = c.seq - 2 * list.length + 1
      const firstUnread = c.unread - list.length + 1
      const events = list.flatMap((m, k): StreamEvent[] => [
        { seq: firstSeq + 2 * k, kind: 'notification', data: messageJson(m) },
        { seq: firstSeq + 2 * k + 1, kind: 'unread_count', data: { unread_count: firstUnread + k } },
      ])
      for (const e of events) logRows.push([c.userId, e.seq, e.kind, e.kind === 'notification' ? e.data.id : JSON.stringify(e.data)])
      if (c.seq > STREAM_LOG_SIZE) s.trim.run(c.userId, c.seq - STREAM_LOG_SIZE)
      out.set(c.userId, events)
    }
    s.logMany.run({ events: JSON.stringify(logRows), now })
    return out
  })
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
      if (f.status !== 'all') where.push(f.status === 'unread' ? 'read = 0' : 'read = 1')
      if (f.topic) {
        where.push('topic = ?')
        params.push(f.topic)
      }
      const after = decodeCursor(f.cursor)
      if (after) {
        where.push('id < ?')
        params.push(after)
      }
      const rows = db
        .prepare(`SELECT ${COLUMNS} FROM inbox_messages WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT ?`)
        .all(...params, f.limit + 1) as RawMessage[]
      const more = rows.length > f.limit
      const data = (more ? rows.slice(0, f.limit) : rows).map(mapMessage)
      return {
        data,
        nextCursor: more ? encodeCursor(data[data.length - 1]!.id) : null,
        unreadCount: (unread.get(userId) as number | undefined) ?? 0,
      }
    },
    unreadCount: (userId) => (unread.get(userId) as number | undefined) ?? 0,
    changeState: (userId, ids, change, now) =>
      ids.length === 0 ? { updated: 0, events: [] } : changeTx(userId, ids, change, now),
    readAll: readAllTx,
    replay(userId, afterSeq, limit = STREAM_LOG_SIZE) {
      const out: StreamEvent[] = []
      for (const r of s.replay.all(userId, afterSeq, limit) as ReplayRow[]) {
        if (r.kind !== 'notification') out.push({ seq: r.seq, kind: r.kind, data: parseJsonOr<Record<string, unknown>>(r.data, {}) })
        // A message removed by retention since is skipped; ids stay increasing.
        else if (r.msgId !== null) out.push({ seq: r.seq, kind: r.kind, data: messageJson(replayMessage(r, userId)) })
      }
      return out
    },
    lastSeq: (userId) => (lastSeq.get(userId) as number | undefined) ?? 0,
  }
}
