/**
 * The inbox on PostgreSQL: `Async<InboxStore>` (store/inbox.ts is the contract and the SQLite
 * original; messages, counts, events and their ids are the same).
 *
 * Several nodes write one database, so the per-user stream ids come from the database: a
 * user's inbox_counters row holds `last_seq`, and every writer takes its ids from it under the
 * row's lock, held to commit. Not a global SEQUENCE: numbers drawn from one are committed out
 * of order by concurrent transactions, so a client resuming after id 105 could miss a 104
 * committed later; under the row lock a user's ids commit in order, without gaps, as on SQLite,
 * and a message's seq is also its list position. The lock is taken first, before any message
 * or count row (the lock order of schema-directory.ts), so two nodes never deadlock on a user.
 */
import type { Async } from '../contract.js'
import type { ChangeResult, InboxBulkChange, InboxCounts, InboxSelection, InboxStateChange, InboxStore } from '../inbox.js'
import { mapMessage, messageColumns, newMessage, messageJson, STREAM_LOG_SIZE, type InboxMessage, type NewInboxMessage, type RawMessage, type StreamEvent } from '../inbox-types.js'
import { SCAN_STATEMENT_LIMIT, scanForPage } from '../capped-scan.js'
import { decodeInboxCursor, encodeCursor } from '../../lib/cursor.js'
import { atomically, quoteAliases } from './atomic.js'
import { createPgReplay } from './inbox-replay.js'
import type { PgQueryable } from './queryable.js'

const COLUMNS = quoteAliases(messageColumns())

/** Who may be changed: the user's own messages among $3, and with an app-limited token ($2) only that app's. */
const OWN = `user_id = $1 AND ($2::text IS NULL OR app_id = $2) AND id = ANY($3::text[])`
/** The optional filters of a bulk change ($3 topic, $4 app, $5 read, $6 tags: any of them). */
const FILTER = `($3::text IS NULL OR topic = $3) AND ($4::text IS NULL OR app_id = $4)
  AND ($5::integer IS NULL OR read = $5) AND snoozed_until IS NULL
  AND ($6::text[] IS NULL OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(tags::jsonb) t WHERE t = ANY($6::text[])))`

/** The PostgreSQL inbox statements by name. */
export const PG_INBOX_SQL = {
  // One statement for a batch of any size: one array per column.
  insert: `INSERT INTO inbox_messages (id, user_id, app_id, notification_id, delivery_id, topic, title, body, body_format,
      severity, action_url, payload, tags, created_at, seq, unread_after)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
      $10::text[], $11::text[], $12::text[], $13::text[], $14::bigint[], $15::bigint[], $16::integer[])`,
  byDelivery: `SELECT ${COLUMNS} FROM inbox_messages WHERE delivery_id = $1`,
  byId: `SELECT ${COLUMNS} FROM inbox_messages WHERE id = $1`,
  unread: `SELECT unread_count AS n FROM inbox_counters WHERE user_id = $1`,
  lockUnread: `SELECT unread_count AS n FROM inbox_counters WHERE user_id = $1 FOR UPDATE`,
  existing: `SELECT delivery_id AS id FROM inbox_messages WHERE delivery_id = ANY($1::text[])`,
  // A batch takes 2 ids per message for each user, creating missing counter rows and locking
  // them in one order (two batches to overlapping users cannot deadlock), before anything is
  // read. The unread counts returned are before the batch's messages (the insert trigger adds them).
  countNew: `INSERT INTO inbox_counters AS c (user_id, unread_count, last_seq)
      SELECT b.u, 0, 2 * b.n FROM unnest($1::text[], $2::integer[]) AS b(u, n) ORDER BY b.u COLLATE "C"
    ON CONFLICT (user_id) DO UPDATE SET last_seq = c.last_seq + excluded.last_seq
    RETURNING c.user_id AS "userId", c.unread_count AS unread, c.last_seq AS seq`,
  // Gives back the ids of messages found written already (rows still locked: nobody took more).
  returnSeqs: `UPDATE inbox_counters c SET last_seq = c.last_seq - b.d FROM unnest($1::text[], $2::integer[]) AS b(u, d)
    WHERE c.user_id = b.u`,
  newMessage: `INSERT INTO inbox_counters AS c (user_id, unread_count, last_seq) VALUES ($1, 0, 2)
    ON CONFLICT (user_id) DO UPDATE SET last_seq = c.last_seq + 2
    RETURNING unread_count + 1 AS unread, last_seq AS seq`,
  // A repeat found after taking the ids gives them back (the row is still locked: nobody took more).
  returnSeq: `UPDATE inbox_counters SET last_seq = last_seq - 2 WHERE user_id = $1`,
  lastSeq: `SELECT last_seq AS n FROM inbox_counters WHERE user_id = $1`,
  // Takes the next id, logs the event and keeps the last STREAM_LOG_SIZE: one round trip.
  append: `WITH s AS (INSERT INTO inbox_counters AS c (user_id, unread_count, last_seq) VALUES ($1, 0, 1)
        ON CONFLICT (user_id) DO UPDATE SET last_seq = c.last_seq + 1 RETURNING last_seq),
      t AS (DELETE FROM inbox_stream WHERE user_id = $1 AND seq <= (SELECT last_seq FROM s) - ${STREAM_LOG_SIZE})
    INSERT INTO inbox_stream (user_id, seq, kind, data, created_at) SELECT $1, last_seq, $2, $3, $4 FROM s RETURNING seq`,
  positionOf: `SELECT seq FROM inbox_messages WHERE id = $1 AND user_id = $2`,
  counts: `SELECT tag, sum(total) AS total, sum(unread) AS unread, sum(unseen) AS unseen FROM inbox_counts
    WHERE user_id = $1 AND ($2::text IS NULL OR app_id = $2) AND ($3::text IS NULL OR topic = $3) AND tag = ANY($4::text[])
    GROUP BY tag ORDER BY tag`,
  read: `UPDATE inbox_messages SET read = 1, read_at = $4, seen = 1, seen_at = coalesce(seen_at, $4) WHERE ${OWN} AND read = 0 RETURNING id`,
  unreadState: `UPDATE inbox_messages SET read = 0, read_at = NULL WHERE ${OWN} AND read = 1 RETURNING id`,
  seen: `UPDATE inbox_messages SET seen = 1, seen_at = $4 WHERE ${OWN} AND seen = 0 RETURNING id`,
  archive: `UPDATE inbox_messages SET archived = 1, archived_at = $4 WHERE ${OWN} AND archived = 0 RETURNING id`,
  unarchive: `UPDATE inbox_messages SET archived = 0, archived_at = NULL WHERE ${OWN} AND archived = 1 RETURNING id`,
  clicked: `UPDATE inbox_messages SET clicked_at = coalesce(clicked_at, $4), read = 1, read_at = coalesce(read_at, $4),
      seen = 1, seen_at = coalesce(seen_at, $4)
    WHERE ${OWN} AND (clicked_at IS NULL OR read = 0) RETURNING id`,
  snooze: `UPDATE inbox_messages SET snoozed_until = $4 WHERE ${OWN} AND snoozed_until IS DISTINCT FROM $4 RETURNING id`,
  unsnooze: `UPDATE inbox_messages SET snoozed_until = NULL WHERE ${OWN} AND snoozed_until IS NOT NULL RETURNING id`,
  readAll: `UPDATE inbox_messages SET read = 1, read_at = $2, seen = 1, seen_at = coalesce(seen_at, $2)
    WHERE user_id = $1 AND read = 0 AND ${FILTER} RETURNING id`,
  seenAll: `UPDATE inbox_messages SET seen = 1, seen_at = $2 WHERE user_id = $1 AND seen = 0 AND ${FILTER} RETURNING id`,
  archiveAll: `UPDATE inbox_messages SET archived = 1, archived_at = $2 WHERE user_id = $1 AND archived = 0 AND ${FILTER} RETURNING id`,
  nextWake: `SELECT min(snoozed_until) AS t FROM inbox_messages WHERE snoozed_until IS NOT NULL`,
  // Snooze wake-ups: the due messages, then their users' counters locked (in one order), then
  // the messages still due woken (another node may have woken some meanwhile).
  dueToWake: `SELECT id, user_id AS "userId" FROM inbox_messages WHERE snoozed_until <= $1 ORDER BY snoozed_until LIMIT $2`,
  lockCounters: `SELECT user_id FROM inbox_counters WHERE user_id = ANY($1::text[]) ORDER BY user_id FOR UPDATE`,
  wake: `UPDATE inbox_messages SET snoozed_until = NULL, read = 0, read_at = NULL WHERE id = ANY($1::text[]) AND snoozed_until <= $2
    RETURNING seq, ${COLUMNS}`,
  byNotificationUser: `SELECT m.id FROM deliveries d JOIN inbox_messages m ON m.delivery_id = d.id
    WHERE d.notification_id = $1 AND d.recipient = $2 AND d.channel = 'inbox'`,
} as const

// Fields listed one by one, as store/inbox.ts does (a spread measured ~4 µs a message more).

/** The insert's sixteen column arrays, filled message by message. */
class MessageColumns {
  readonly cols: unknown[][] = Array.from({ length: 16 }, () => [])
  push(m: InboxMessage, seq: number, unread: number): void {
    const row = [m.id, m.userId, m.appId, m.notificationId, m.deliveryId, m.topic, m.title, m.body, m.bodyFormat, m.severity,
      m.actionUrl, m.payload ? JSON.stringify(m.payload) : null, JSON.stringify(m.tags), m.createdAt, seq, unread]
    for (let i = 0; i < row.length; i++) this.cols[i]!.push(row[i])
  }
}

/** The two stream events of a new message: `notification` at `seq`, `unread_count` at seq + 1. */
const messageEvents = (m: InboxMessage, seq: number, unread: number): StreamEvent[] => [
  { seq, kind: 'notification', data: messageJson(m) },
  { seq: seq + 1, kind: 'unread_count', data: { unread_count: unread } },
]

const ZERO: InboxCounts = { unreadCount: 0, unseenCount: 0, total: 0 }
const NONE: ChangeResult = { updated: 0, events: [] }
const STATE_SQL: Record<InboxStateChange, string> = {
  read: PG_INBOX_SQL.read,
  unread: PG_INBOX_SQL.unreadState,
  seen: PG_INBOX_SQL.seen,
  archive: PG_INBOX_SQL.archive,
  unarchive: PG_INBOX_SQL.unarchive,
  clicked: PG_INBOX_SQL.clicked,
  unsnooze: PG_INBOX_SQL.unsnooze,
}
const BULK_SQL: Record<InboxBulkChange, string> = {
  read_all: PG_INBOX_SQL.readAll,
  seen_all: PG_INBOX_SQL.seenAll,
  archive_all: PG_INBOX_SQL.archiveAll,
}

/** Ids in SQLite's RETURNING order (it walks an `IN` list in key order). */
const sortedIds = (rows: { id: string }[]): string[] => rows.map((r) => r.id).sort()

/** Creates the inbox store over a pool or a transaction's client. Every write runs in one transaction with its counts and log. */
export function createPgInboxStore(q: PgQueryable): Async<InboxStore> {
  const S = PG_INBOX_SQL
  const num = async (c: PgQueryable, sql: string, values: unknown[]): Promise<number> => Number((await c.query<{ n: number }>(sql, values)).rows[0]?.n ?? 0)
  const unreadOf = (c: PgQueryable, userId: string) => num(c, S.unread, [userId])

  /** Appends one event to the durable log, keeping the user's last STREAM_LOG_SIZE. */
  const append = async (c: PgQueryable, userId: string, kind: StreamEvent['kind'], data: Record<string, unknown>, now: number, stored?: string): Promise<StreamEvent> => {
    const r = await c.query<{ seq: number }>(S.append, [userId, kind, stored ?? JSON.stringify(data), now])
    return { seq: r.rows[0]!.seq, kind, data }
  }
  /** The `state` event of a change, then the `unread_count` event when the count moved. */
  const finish = async (c: PgQueryable, userId: string, count: number, before: number, state: Record<string, unknown>, now: number): Promise<ChangeResult> => {
    if (count === 0) return NONE
    const events = [await append(c, userId, 'state', state, now)]
    const after = await unreadOf(c, userId)
    if (after !== before) events.push(await append(c, userId, 'unread_count', { unread_count: after }, now))
    return { updated: count, events }
  }

  const insertMessage = (input: NewInboxMessage, now: number) =>
    atomically(q, async (c) => {
      // The ids first: the counter row's lock makes a concurrent write of the same delivery visible below.
      const { unread, seq } = (await c.query<{ unread: number; seq: number }>(S.newMessage, [input.userId])).rows[0]!
      if (input.deliveryId !== null) {
        const prior = (await c.query<RawMessage>(S.byDelivery, [input.deliveryId])).rows[0]
        if (prior) {
          await c.query(S.returnSeq, [input.userId])
          return { message: mapMessage(prior), created: false, events: [] as StreamEvent[] }
        }
      }
      const m = newMessage(input, now)
      const cols = new MessageColumns()
      cols.push(m, seq - 1, unread)
      await c.query(S.insert, cols.cols)
      return { message: m, created: true, events: messageEvents(m, seq - 1, unread) }
    })

  /** Groups messages by user, keeping the first of each delivery id and none of `skip`'s. */
  const byUserOf = (inputs: readonly NewInboxMessage[], skip: Set<string>): Map<string, NewInboxMessage[]> => {
    const seen = new Set<string>()
    const byUser = new Map<string, NewInboxMessage[]>()
    for (const m of inputs) {
      if (m.deliveryId !== null) {
        if (seen.has(m.deliveryId) || skip.has(m.deliveryId)) continue
        seen.add(m.deliveryId)
      }
      const list = byUser.get(m.userId)
      if (list) list.push(m)
      else byUser.set(m.userId, [m])
    }
    return byUser
  }

  const insertMessages = (inputs: readonly NewInboxMessage[], now: number) =>
    atomically(q, async (c) => {
      // The ids first (the counter rows' locks make a concurrent write of the same deliveries
      // visible below); a delivery already written (a re-claim after a crash between write and
      // settle) or twice in the batch is then skipped, and its ids given back, so ids and counts
      // stay exact. Three statements for a batch, however many users.
      const asked = byUserOf(inputs, new Set())
      const users = [...asked.keys()]
      const took = (await c.query<{ userId: string; unread: number; seq: number }>(S.countNew, [users, users.map((u) => asked.get(u)!.length)])).rows
      const counters = new Map(took.map((r) => [r.userId, r]))
      const ids = inputs.flatMap((m) => (m.deliveryId === null ? [] : [m.deliveryId]))
      const written = ids.length === 0 ? [] : (await c.query<{ id: string }>(S.existing, [ids])).rows.map((r) => r.id)
      const byUser = written.length === 0 ? asked : byUserOf(inputs, new Set(written))
      if (written.length > 0) {
        const giving = users.filter((u) => asked.get(u)!.length !== (byUser.get(u)?.length ?? 0))
        const back = giving.map((u) => 2 * (asked.get(u)!.length - (byUser.get(u)?.length ?? 0)))
        await c.query(S.returnSeqs, [giving, back])
        giving.forEach((u, i) => (counters.get(u)!.seq -= back[i]!))
      }
      const out = new Map<string, StreamEvent[]>()
      if (byUser.size === 0) return out
      const cols = new MessageColumns()
      for (const [userId, list] of byUser) {
        const counter = counters.get(userId)!
        // The batch took 2 ids per message; each adds one unread (the trigger's).
        const firstSeq = counter.seq - 2 * list.length + 1
        const events: StreamEvent[] = []
        for (let k = 0; k < list.length; k++) {
          const m = newMessage(list[k]!, now)
          const seq = firstSeq + 2 * k
          const count = counter.unread + k + 1
          cols.push(m, seq, count)
          events.push(...messageEvents(m, seq, count))
        }
        out.set(userId, events)
      }
      await c.query(S.insert, cols.cols)
      return out
    })

  /** A list cursor's position: a seq, or (a cursor naming a message) that message's seq. */
  const position = async (userId: string, key: string | null): Promise<number | null> => {
    if (key === null) return null
    if (/^\d{1,15}$/.test(key)) return Number(key)
    return (await q.query<{ seq: number }>(S.positionOf, [key, userId])).rows[0]?.seq ?? null
  }

  const readCounts = async (userId: string, sel: { topic?: string | null; appId?: string | null }, tags: readonly string[]) => {
    const rows = (
      await q.query<{ tag: string; total: number; unread: number; unseen: number }>(S.counts, [userId, sel.appId ?? null, sel.topic ?? null, ['', ...tags]])
    ).rows
    const byTag = new Map<string, InboxCounts>()
    let all = ZERO
    for (const r of rows) {
      const c = { unreadCount: Number(r.unread), unseenCount: Number(r.unseen), total: Number(r.total) }
      if (r.tag === '') all = c
      else byTag.set(r.tag, c)
    }
    for (const t of tags) if (!byTag.has(t)) byTag.set(t, ZERO)
    return { all, byTag }
  }

  const replay = createPgReplay(q)

  return {
    insertMessage,
    insertMessages: async (inputs, now) => (inputs.length === 0 ? new Map() : insertMessages(inputs, now)),
    async list(userId, f) {
      const params: unknown[] = [userId, f.archived ? 1 : 0]
      const p = (v: unknown) => `$${params.push(v)}`
      const where = ['user_id = $1', 'archived = $2', f.snoozed ? 'snoozed_until IS NOT NULL' : 'snoozed_until IS NULL']
      if (f.status === 'unread') where.push('read = 0')
      const after = await position(userId, decodeInboxCursor(f.cursor))
      if (after !== null) where.push(`seq < ${p(after)}`)
      const hit: string[] = []
      if (f.status === 'read') hit.push('read = 1')
      if (f.topic) hit.push(`topic = ${p(f.topic)}`)
      if (f.appId) hit.push(`app_id = ${p(f.appId)}`)
      if (f.tags && f.tags.length > 0) hit.push(`EXISTS (SELECT 1 FROM jsonb_array_elements_text(tags::jsonb) t WHERE t = ANY(${p([...f.tags])}::text[]))`)
      const w = where.join(' AND ')
      let rows: (RawMessage & { pos: number })[]
      let resumeAfter: number | null = null
      if (hit.length === 0) {
        rows = (await q.query<RawMessage & { pos: number }>(`SELECT seq AS pos, ${COLUMNS} FROM inbox_messages WHERE ${w} ORDER BY seq DESC LIMIT ${p(f.limit + 1)}`, params)).rows
      } else {
        // Topic, tags, app and read have no index: a page reads at most LIST_SCAN_LIMIT of the
        // user's messages and continues from there (store/capped-scan.ts).
        const scanned = await q.query<{ seq: number; hit: number }>(
          `SELECT seq, (${hit.join(' AND ')})::integer AS hit FROM inbox_messages WHERE ${w} ORDER BY seq DESC LIMIT ${SCAN_STATEMENT_LIMIT}`,
          params,
        )
        const found = scanForPage(
          scanned.rows.map((r) => [r.seq, r.hit] as const),
          f.limit,
        )
        resumeAfter = found.resumeAfter
        rows =
          found.hits.length === 0
            ? []
            : (
                await q.query<RawMessage & { pos: number }>(
                  `SELECT seq AS pos, ${COLUMNS} FROM inbox_messages WHERE user_id = $1 AND seq = ANY($2::bigint[]) ORDER BY seq DESC`,
                  [userId, found.hits],
                )
              ).rows
      }
      const more = rows.length > f.limit
      const page = more ? rows.slice(0, f.limit) : rows
      const next = more ? page[page.length - 1]!.pos : resumeAfter
      return { data: page.map(mapMessage), nextCursor: next === null ? null : encodeCursor(String(next)) }
    },
    unreadCount: (userId) => unreadOf(q, userId),
    counts: readCounts,
    changeState: async (userId, appId, ids, change, now) =>
      ids.length === 0
        ? NONE
        : atomically(q, async (c) => {
            const before = await num(c, S.lockUnread, [userId])
            const sql = STATE_SQL[change]
            // Changes that clear a time take no `now` (PostgreSQL refuses an unused parameter).
            const args = sql.includes('$4') ? [userId, appId, [...ids], now] : [userId, appId, [...ids]]
            const changed = sortedIds((await c.query<{ id: string }>(sql, args)).rows)
            return finish(c, userId, changed.length, before, { change, ids: changed }, now)
          }),
    snooze: async (userId, appId, ids, until, now) =>
      ids.length === 0
        ? NONE
        : atomically(q, async (c) => {
            const before = await num(c, S.lockUnread, [userId])
            const changed = sortedIds((await c.query<{ id: string }>(S.snooze, [userId, appId, [...ids], until])).rows)
            return finish(c, userId, changed.length, before, { change: 'snooze', ids: changed, until: new Date(until).toISOString() }, now)
          }),
    bulk: (userId, change, sel: InboxSelection, now) =>
      atomically(q, async (c) => {
        const before = await num(c, S.lockUnread, [userId])
        const tags = sel.tags && sel.tags.length > 0 ? [...sel.tags] : null
        const read = sel.read === undefined || sel.read === null ? null : sel.read ? 1 : 0
        const r = await c.query<{ id: string }>(BULK_SQL[change], [userId, now, sel.topic ?? null, sel.appId ?? null, read, tags])
        // A bulk event names its filter, not its ids (there may be thousands).
        const filter = { topic: sel.topic ?? null, tags: sel.tags ?? null, app_id: sel.appId ?? null, read: sel.read ?? null }
        return finish(c, userId, r.rows.length, before, { change, filter, updated: r.rows.length }, now)
      }),
    nextWake: async () => {
      const t = (await q.query<{ t: number | null }>(S.nextWake)).rows[0]?.t
      return t === null || t === undefined ? null : Number(t)
    },
    wakeDue: (now, limit = 1000) =>
      atomically(q, async (c) => {
        const due = (await c.query<{ id: string; userId: string }>(S.dueToWake, [now, limit])).rows
        const out = new Map<string, StreamEvent[]>()
        if (due.length === 0) return out
        await c.query(S.lockCounters, [[...new Set(due.map((r) => r.userId))]])
        const woken = (await c.query<RawMessage & { seq: number }>(S.wake, [due.map((r) => r.id), now])).rows.sort((a, b) => a.seq - b.seq)
        const byUser = new Map<string, RawMessage[]>()
        for (const r of woken) {
          const list = byUser.get(r.userId)
          if (list) list.push(r)
          else byUser.set(r.userId, [r])
        }
        for (const [userId, rows] of byUser) {
          const events: StreamEvent[] = []
          // The log names the message (replay joins it, as it is then); live streams get it whole.
          for (const r of rows) events.push(await append(c, userId, 'notification', messageJson(mapMessage(r)), now, r.id))
          events.push(await append(c, userId, 'unread_count', { unread_count: await unreadOf(c, userId) }, now))
          out.set(userId, events)
        }
        return out
      }),
    get: async (id) => {
      const r = (await q.query<RawMessage>(S.byId, [id])).rows[0]
      return r ? mapMessage(r) : null
    },
    messageOf: async (notificationId, userId) => (await q.query<{ id: string }>(S.byNotificationUser, [notificationId, userId])).rows[0]?.id ?? null,
    replay,
    logUnreadCount: (userId, now) =>
      atomically(q, async (c) => {
        // The counter row locked first, then read: the count logged is the one at this id.
        await c.query(S.lockUnread, [userId])
        return append(c, userId, 'unread_count', { unread_count: await unreadOf(c, userId) }, now)
      }),
    lastSeq: (userId) => num(q, S.lastSeq, [userId]),
  }
}
