import type { Statement } from 'better-sqlite3'
import { prepareAll, statementCache, type Db } from './db.js'
import { decodeInboxCursor, encodeCursor } from '../../lib/cursor.js'
import { createReplay } from './inbox-replay.js'
import { SCAN_STATEMENT_LIMIT, scanForPage } from '../capped-scan.js'
import { INBOX_SQL, MESSAGE_WIDTH, MESSAGES_PER_INSERT } from './inbox-sql.js'
import { newMessage, mapMessage, messageColumns, messageJson, STREAM_LOG_SIZE, type InboxMessage, type NewInboxMessage, type RawMessage, type StreamEvent } from '../inbox-types.js'
import { type ChangeResult, type InboxBulkChange, type InboxCounts, type InboxSelection, type InboxStateChange, type InboxStore } from '../inbox.js'


/**
 * Wraps `fn` in an IMMEDIATE transaction, or runs it as is inside the caller's transaction:
 * a savepoint per message would double the statements of a 1,000-recipient inbox batch.
 */
function inTx<A extends unknown[], R>(db: Db, fn: (...args: A) => R): (...args: A) => R {
  const tx = db.transaction(fn)
  return (...args) => (db.inTransaction ? fn(...args) : tx.immediate(...args))
}

/** One message's insert parameters, in INSERT_COLUMNS order. */
const rowOf = (m: InboxMessage, seq: number, unread: number): unknown[] => [
  m.id, m.userId, m.appId, m.notificationId, m.deliveryId, m.topic, m.title, m.body, m.bodyFormat, m.severity, m.actionUrl,
  m.payload ? JSON.stringify(m.payload) : null, JSON.stringify(m.tags), m.createdAt, seq, unread,
]

/** The two stream events of a new message: `notification` at `seq`, `unread_count` at seq + 1. */
const messageEvents = (m: InboxMessage, seq: number, unread: number): StreamEvent[] => [
  { seq, kind: 'notification', data: messageJson(m) },
  { seq: seq + 1, kind: 'unread_count', data: { unread_count: unread } },
]

const ZERO: InboxCounts = { unreadCount: 0, unseenCount: 0, total: 0 }

/** Creates the inbox store over a connection. Every write runs in one transaction with its counts and log. */
export function createInboxStore(db: Db): InboxStore {
  const s = prepareAll(db, INBOX_SQL)
  const unread = s.unread.pluck()
  const nextSeq = s.nextSeq.pluck()
  const lastSeqStmt = s.lastSeq.pluck()
  const nextWake = s.nextWake.pluck()
  const lastSeq = (userId: string): number => (lastSeqStmt.get(userId) as number | undefined) ?? 0
  const unreadOf = (userId: string): number => (unread.get(userId) as number | undefined) ?? 0
  const existing = s.existing.pluck()
  const positionOf = s.positionOf.pluck()
  const byNotificationUser = s.byNotificationUser.pluck()

  /** Appends one event to the durable log, keeping the user's last STREAM_LOG_SIZE. */
  const append = (userId: string, kind: StreamEvent['kind'], data: Record<string, unknown>, now: number, stored?: string): StreamEvent => {
    const seq = nextSeq.get(userId) as number
    s.appendEvent.run(userId, seq, kind, stored ?? JSON.stringify(data), now)
    if (seq > STREAM_LOG_SIZE) s.trim.run(userId, seq - STREAM_LOG_SIZE)
    return { seq, kind, data }
  }
  /** The `state` event of a change, then the `unread_count` event when the count moved. */
  const finish = (userId: string, ids: string[], before: number, state: Record<string, unknown>, now: number): ChangeResult => {
    if (ids.length === 0) return { updated: 0, events: [] }
    const events = [append(userId, 'state', state, now)]
    const after = unreadOf(userId)
    if (after !== before) events.push(append(userId, 'unread_count', { unread_count: after }, now))
    return { updated: ids.length, events }
  }

  const insertTx = inTx(db, (input: NewInboxMessage, now: number) => {
    if (input.deliveryId !== null) {
      const prior = s.byDelivery.get(input.deliveryId) as RawMessage | undefined
      if (prior) return { message: mapMessage(prior), created: false, events: [] }
    }
    // Two stream sequence numbers; the insert trigger adds the unread.
    const { unread, seq } = s.newMessage.get(input.userId) as { unread: number; seq: number }
    const m = newMessage(input, now)
    s.insert.run(rowOf(m, seq - 1, unread))
    return { message: m, created: true, events: messageEvents(m, seq - 1, unread) }
  })
  const insertManyTx = inTx(db, (inputs: readonly NewInboxMessage[], now: number) => {
    // A delivery already written (a re-claim after a crash between write and settle) or twice
    // in the batch is skipped before anything is written, so counts stay exact.
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
      // The batch took 2 sequence numbers per message; each adds one unread (the trigger's).
      const firstSeq = c.seq - 2 * list.length + 1
      const events: StreamEvent[] = []
      for (let k = 0; k < list.length; k++) {
        const m = newMessage(list[k]!, now)
        const seq = firstSeq + 2 * k
        const count = c.unread + k + 1
        rows.push(...rowOf(m, seq, count))
        events.push(...messageEvents(m, seq, count))
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
    statement(`SELECT rowid AS pos, ${messageColumns()} FROM inbox_messages WHERE ${where} ORDER BY rowid DESC LIMIT ?`)
  // Topic, tags, app and read have no index of their own (one per fan-out recipient would cost
  // every notification): such a page reads the user's messages, at most LIST_SCAN_LIMIT of them,
  // and continues from there.
  const scanStatement = (where: string, hit: string): Statement =>
    statement(`SELECT rowid, ${hit} AS hit FROM inbox_messages WHERE ${where} ORDER BY rowid DESC LIMIT ${SCAN_STATEMENT_LIMIT}`).raw(true)
  const byPositions = db.prepare(
    `SELECT rowid AS pos, ${messageColumns()} FROM inbox_messages WHERE rowid IN (SELECT value FROM json_each(?)) ORDER BY rowid DESC`,
  )
  /** A list cursor's position: a rowid, or (a cursor made before v3) the id of the user's message. */
  const position = (userId: string, key: string | null): number | null => {
    if (key === null) return null
    if (/^\d{1,15}$/.test(key)) return Number(key)
    return (positionOf.get(key, userId) as number | undefined) ?? null
  }

  const changeTx = inTx(db, (userId: string, appId: string | null, ids: readonly string[], change: InboxStateChange, now: number) => {
    const before = unreadOf(userId)
    const sql = change === 'unread' ? s.unreadState : s[change]
    const rows = sql.all({ userId, appId, ids: JSON.stringify(ids), now }) as { id: string }[]
    const changed = rows.map((r) => r.id)
    return finish(userId, changed, before, { change, ids: changed }, now)
  })
  const snoozeTx = inTx(db, (userId: string, appId: string | null, ids: readonly string[], until: number, now: number) => {
    const before = unreadOf(userId)
    const rows = s.snooze.all({ userId, appId, ids: JSON.stringify(ids), until }) as { id: string }[]
    const changed = rows.map((r) => r.id)
    return finish(userId, changed, before, { change: 'snooze', ids: changed, until: new Date(until).toISOString() }, now)
  })
  const bulkSql = { read_all: s.readAll, seen_all: s.seenAll, archive_all: s.archiveAll } as const
  const bulkTx = inTx(db, (userId: string, change: InboxBulkChange, sel: InboxSelection, now: number) => {
    const before = unreadOf(userId)
    const tags = sel.tags && sel.tags.length > 0 ? JSON.stringify(sel.tags) : null
    const read = sel.read === undefined || sel.read === null ? null : sel.read ? 1 : 0
    const rows = bulkSql[change].all({ userId, now, topic: sel.topic ?? null, appId: sel.appId ?? null, tags, read }) as { id: string }[]
    // A bulk event names its filter, not its ids (there may be thousands): clients apply the
    // filter to what they show, as the server did.
    const filter = { topic: sel.topic ?? null, tags: sel.tags ?? null, app_id: sel.appId ?? null, read: sel.read ?? null }
    return finish(userId, rows.map((r) => r.id), before, { change, filter, updated: rows.length }, now)
  })
  const wakeTx = db.transaction((now: number, limit: number) => {
    const rows = s.wakeDue.all({ now, limit }) as { id: string; userId: string; appId: string }[]
    const byUser = new Map<string, string[]>()
    for (const r of rows) {
      const list = byUser.get(r.userId)
      if (list) list.push(r.id)
      else byUser.set(r.userId, [r.id])
    }
    const out = new Map<string, StreamEvent[]>()
    for (const [userId, ids] of byUser) {
      const events: StreamEvent[] = []
      // The log names the message (replay joins it, as it is then); live streams get it whole.
      for (const id of ids) events.push(append(userId, 'notification', messageJson(mapMessage(s.byId.get(id) as RawMessage)), now, id))
      events.push(append(userId, 'unread_count', { unread_count: unreadOf(userId) }, now))
      out.set(userId, events)
    }
    return out
  })

  const readCounts = (userId: string, sel: { topic?: string | null; appId?: string | null }, tags: readonly string[]) => {
    const rows = s.counts.all({ userId, appId: sel.appId ?? null, topic: sel.topic ?? null, tags: JSON.stringify(['', ...tags]) }) as {
      tag: string
      total: number
      unread: number
      unseen: number
    }[]
    const byTag = new Map<string, InboxCounts>()
    let all = ZERO
    for (const r of rows) {
      const c = { unreadCount: r.unread, unseenCount: r.unseen, total: r.total }
      if (r.tag === '') all = c
      else byTag.set(r.tag, c)
    }
    for (const t of tags) if (!byTag.has(t)) byTag.set(t, ZERO)
    return { all, byTag }
  }

  return {
    insertMessage: insertTx,
    insertMessages: (inputs, now) => (inputs.length === 0 ? new Map() : insertManyTx(inputs, now)),
    list(userId, f) {
      const where = ['user_id = ?', 'archived = ?', f.snoozed ? 'snoozed_until IS NOT NULL' : 'snoozed_until IS NULL']
      const params: unknown[] = [userId, f.archived ? 1 : 0]
      if (f.status === 'unread') where.push('read = 0')
      const after = position(userId, decodeInboxCursor(f.cursor))
      if (after !== null) {
        where.push('rowid < ?')
        params.push(after)
      }
      const hit: string[] = []
      const hitParams: unknown[] = []
      if (f.status === 'read') hit.push('read = 1')
      if (f.topic) {
        hit.push('topic = ?')
        hitParams.push(f.topic)
      }
      if (f.appId) {
        hit.push('app_id = ?')
        hitParams.push(f.appId)
      }
      if (f.tags && f.tags.length > 0) {
        hit.push('EXISTS (SELECT 1 FROM json_each(tags) t WHERE t.value IN (SELECT value FROM json_each(?)))')
        hitParams.push(JSON.stringify(f.tags))
      }
      const w = where.join(' AND ')
      let rows: (RawMessage & { pos: number })[]
      let resumeAfter: number | null = null
      if (hit.length === 0) rows = listStatement(w).all(...params, f.limit + 1) as (RawMessage & { pos: number })[]
      else {
        const scan = scanStatement(w, `(${hit.join(' AND ')})`)
        const found = scanForPage(scan.iterate(...hitParams, ...params) as IterableIterator<[number, number]>, f.limit)
        resumeAfter = found.resumeAfter
        rows = found.hits.length === 0 ? [] : (byPositions.all(JSON.stringify(found.hits)) as (RawMessage & { pos: number })[])
      }
      const more = rows.length > f.limit
      const page = more ? rows.slice(0, f.limit) : rows
      const next = more ? page[page.length - 1]!.pos : resumeAfter
      return { data: page.map(mapMessage), nextCursor: next === null ? null : encodeCursor(String(next)) }
    },
    unreadCount: unreadOf,
    counts: readCounts,
    changeState: (userId, appId, ids, change, now) => (ids.length === 0 ? { updated: 0, events: [] } : changeTx(userId, appId, ids, change, now)),
    snooze: (userId, appId, ids, until, now) => (ids.length === 0 ? { updated: 0, events: [] } : snoozeTx(userId, appId, ids, until, now)),
    bulk: bulkTx,
    nextWake: () => (nextWake.get() as number | null) ?? null,
    wakeDue: (now, limit = 1000) => wakeTx(now, limit),
    get: (id) => {
      const r = s.byId.get(id) as RawMessage | undefined
      return r ? mapMessage(r) : null
    },
    messageOf: (notificationId, userId) => (byNotificationUser.get(notificationId, userId) as string | undefined) ?? null,
    replay: createReplay(db, lastSeq),
    logUnreadCount: (userId, now) => append(userId, 'unread_count', { unread_count: unreadOf(userId) }, now),
    lastSeq,
  }
}
