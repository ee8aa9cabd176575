import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { InboxMessage, NewInboxMessage, StreamEvent } from '../inbox.js'
import { LIST_SCAN_LIMIT } from '../capped-scan.js'
import { STREAM_LOG_SIZE } from '../inbox-types.js'
import { BACKENDS, numberPool, openPgBackend, openSqliteBackend, pgFamilies, type DirectoryBackend } from '../../../test/support/pg-directory-backends.js'
import { PG_URL } from '../../../test/support/pg.js'
import { INBOX_NOTIFY_CHANNEL } from './schema-directory.js'
import pg from 'pg'
import fc from 'fast-check'

const T0 = Date.UTC(2026, 0, 1)
let n = 0
const msg = (userId: string, extra: Partial<NewInboxMessage> = {}): NewInboxMessage => ({
  userId,
  notificationId: null,
  deliveryId: `dlv_${++n}`,
  topic: 'deploy',
  title: 'Deployed',
  body: 'b',
  severity: 'info',
  actionUrl: null,
  payload: null,
  ...extra,
})
const kinds = (events: StreamEvent[]) => events.map((e) => `${e.seq}:${e.kind}`)

describe.each(BACKENDS)('inbox contract on $name', ({ open }) => {
  let b: DirectoryBackend
  beforeAll(async () => {
    b = await open()
  })
  afterAll(() => b.close())
  beforeEach(() => b.reset())

  it('writes a message once per delivery, with its two stream events and the unread count', async () => {
    const inbox = b.inbox
    const first = await inbox.insertMessage(msg('u1', { deliveryId: 'dlv_a', payload: { z: 1, a: [2] }, tags: ['x', 'y'], appId: 'app1', bodyFormat: 'markdown' }), T0)
    expect(first.created).toBe(true)
    expect(first.message).toMatchObject({ userId: 'u1', appId: 'app1', tags: ['x', 'y'], payload: { z: 1, a: [2] }, bodyFormat: 'markdown', read: false, createdAt: T0 })
    expect(first.events).toEqual([
      { seq: 1, kind: 'notification', data: expect.objectContaining({ id: first.message.id, app_id: 'app1', tags: ['x', 'y'] }) },
      { seq: 2, kind: 'unread_count', data: { unread_count: 1 } },
    ])
    const again = await inbox.insertMessage(msg('u1', { deliveryId: 'dlv_a', title: 'other' }), T0 + 1)
    expect(again).toEqual({ message: first.message, created: false, events: [] })
    expect(await inbox.lastSeq('u1')).toBe(2)
    const second = await inbox.insertMessage(msg('u1'), T0 + 2)
    expect(kinds(second.events)).toEqual(['3:notification', '4:unread_count'])
    expect(second.events[1]!.data).toEqual({ unread_count: 2 })
    expect(await inbox.unreadCount('u1')).toBe(2)
    expect(await inbox.unreadCount('nobody')).toBe(0)
    expect(await inbox.lastSeq('nobody')).toBe(0)
    expect(await inbox.get(first.message.id)).toEqual(first.message)
    expect(await inbox.get('msg_none')).toBeNull()
  })

  it('writes a batch: repeats skipped, ids and counts per user continuing from single writes', async () => {
    const inbox = b.inbox
    await inbox.insertMessage(msg('u1', { deliveryId: 'dlv_old' }), T0)
    const out = await inbox.insertMessages(
      [msg('u2'), msg('u1', { deliveryId: 'dlv_old' }), msg('u1', { deliveryId: 'dlv_b' }), msg('u1', { deliveryId: 'dlv_b' }), msg('u1'), msg('u2', { deliveryId: null })],
      T0 + 1,
    )
    expect([...out.keys()].sort()).toEqual(['u1', 'u2'])
    expect(kinds(out.get('u1')!)).toEqual(['3:notification', '4:unread_count', '5:notification', '6:unread_count'])
    expect(out.get('u1')!.filter((e) => e.kind === 'unread_count').map((e) => e.data)).toEqual([{ unread_count: 2 }, { unread_count: 3 }])
    expect(kinds(out.get('u2')!)).toEqual(['1:notification', '2:unread_count', '3:notification', '4:unread_count'])
    expect(await inbox.unreadCount('u1')).toBe(3)
    expect(await inbox.lastSeq('u2')).toBe(4)
    expect((await inbox.insertMessages([msg('u1', { deliveryId: 'dlv_b' })], T0 + 2)).size).toBe(0)
    expect((await inbox.insertMessages([], T0)).size).toBe(0)
  })

  it('lists newest first with filters and cursors, and counts the visible messages by tag', async () => {
    const inbox = b.inbox
    const ids: string[] = []
    for (let i = 0; i < 6; i++) {
      const r = await inbox.insertMessage(msg('u1', { topic: i % 2 ? 'odd' : 'even', tags: i % 3 === 0 ? ['t3'] : [], appId: i < 3 ? 'default' : 'a2' }), T0 + i)
      ids.push(r.message.id)
    }
    await inbox.insertMessage(msg('u2'), T0)
    const all = await inbox.list('u1', { status: 'all', archived: false, limit: 4 })
    expect(all.data.map((m) => m.id)).toEqual(ids.slice(2).reverse())
    expect(all.nextCursor).not.toBeNull()
    const rest = await inbox.list('u1', { status: 'all', archived: false, limit: 4, cursor: all.nextCursor })
    expect(rest.data.map((m) => m.id)).toEqual([ids[1], ids[0]])
    expect(rest.nextCursor).toBeNull()
    expect((await inbox.changeState('u1', null, [ids[0]!, ids[3]!], 'read', T0 + 10)).updated).toBe(2)
    expect((await inbox.list('u1', { status: 'unread', archived: false, limit: 10 })).data.map((m) => m.id)).toEqual([ids[5], ids[4], ids[2], ids[1]])
    expect((await inbox.list('u1', { status: 'read', archived: false, limit: 10 })).data.map((m) => m.id)).toEqual([ids[3], ids[0]])
    expect((await inbox.list('u1', { status: 'all', archived: false, topic: 'odd', limit: 10 })).data.map((m) => m.id)).toEqual([ids[5], ids[3], ids[1]])
    expect((await inbox.list('u1', { status: 'all', archived: false, tags: ['t3', 'nope'], limit: 10 })).data.map((m) => m.id)).toEqual([ids[3], ids[0]])
    expect((await inbox.list('u1', { status: 'all', archived: false, appId: 'a2', limit: 2 })).data.map((m) => m.id)).toEqual([ids[5], ids[4]])
    const c = await inbox.counts('u1', {}, ['t3', 'none'])
    expect(c.all).toEqual({ unreadCount: 4, unseenCount: 4, total: 6 })
    expect([...c.byTag.entries()]).toEqual([
      ['t3', { unreadCount: 0, unseenCount: 0, total: 2 }],
      ['none', { unreadCount: 0, unseenCount: 0, total: 0 }],
    ])
    expect((await inbox.counts('u1', { topic: 'odd', appId: 'a2' }, [])).all).toEqual({ unreadCount: 1, unseenCount: 1, total: 2 })
    // A message read flag read back whole: times set, flags as booleans.
    expect(await inbox.get(ids[0]!)).toMatchObject({ read: true, seen: true, readAt: T0 + 10, seenAt: T0 + 10, archived: false, archivedAt: null })
  })

  it('changes state by id (own messages, app-limited), logs state and unread_count events', async () => {
    const inbox = b.inbox
    const a = (await inbox.insertMessage(msg('u1', { appId: 'app1' }), T0)).message
    const c = (await inbox.insertMessage(msg('u1'), T0)).message
    const other = (await inbox.insertMessage(msg('u2'), T0)).message
    const read = await inbox.changeState('u1', null, [c.id, a.id, other.id, 'msg_none'], 'read', T0 + 1)
    expect(read.updated).toBe(2)
    expect(read.events).toEqual([
      { seq: 5, kind: 'state', data: { change: 'read', ids: [a.id, c.id].sort() } },
      { seq: 6, kind: 'unread_count', data: { unread_count: 0 } },
    ])
    expect(await inbox.changeState('u1', null, [a.id], 'read', T0 + 2)).toEqual({ updated: 0, events: [] })
    expect(await inbox.changeState('u1', 'app1', [c.id], 'unread', T0 + 2)).toEqual({ updated: 0, events: [] })
    expect(kinds((await inbox.changeState('u1', 'app1', [a.id, c.id], 'unread', T0 + 2)).events)).toEqual(['7:state', '8:unread_count'])
    // Read messages are seen already: nothing changes, nothing is logged.
    expect(kinds((await inbox.changeState('u1', null, [a.id], 'seen', T0 + 3)).events)).toEqual([])
    expect(kinds((await inbox.changeState('u1', null, [a.id], 'archive', T0 + 3)).events)).toEqual(['9:state', '10:unread_count'])
    expect((await inbox.list('u1', { status: 'all', archived: true, limit: 5 })).data.map((m) => m.id)).toEqual([a.id])
    expect(kinds((await inbox.changeState('u1', null, [a.id], 'unarchive', T0 + 4)).events)).toEqual(['11:state', '12:unread_count'])
    const clicked = await inbox.changeState('u1', null, [a.id], 'clicked', T0 + 5)
    expect(kinds(clicked.events)).toEqual(['13:state', '14:unread_count'])
    expect(await inbox.get(a.id)).toMatchObject({ clickedAt: T0 + 5, readAt: T0 + 5, read: true, seenAt: T0 + 1 })
    expect(await inbox.changeState('u1', null, [], 'read', T0)).toEqual({ updated: 0, events: [] })
    expect(await inbox.unreadCount('u1')).toBe(0)
    expect(await inbox.unreadCount('u2')).toBe(1)
  })

  it('snoozes (hidden, not counted), wakes due messages unread again, and unsnoozes', async () => {
    const inbox = b.inbox
    const a = (await inbox.insertMessage(msg('u1'), T0)).message
    const c = (await inbox.insertMessage(msg('u1'), T0)).message
    const d = (await inbox.insertMessage(msg('u2'), T0)).message
    await inbox.changeState('u1', null, [a.id], 'read', T0)
    expect(await inbox.nextWake()).toBeNull()
    const s = await inbox.snooze('u1', null, [a.id, c.id], T0 + 100, T0 + 1)
    expect(s.events).toEqual([
      { seq: 7, kind: 'state', data: { change: 'snooze', ids: [a.id, c.id].sort(), until: new Date(T0 + 100).toISOString() } },
      { seq: 8, kind: 'unread_count', data: { unread_count: 0 } },
    ])
    expect((await inbox.snooze('u1', null, [a.id], T0 + 100, T0 + 1)).updated).toBe(0)
    await inbox.snooze('u2', null, [d.id], T0 + 50, T0 + 1)
    expect(await inbox.nextWake()).toBe(T0 + 50)
    expect((await inbox.list('u1', { status: 'all', archived: false, limit: 5 })).data).toEqual([])
    expect((await inbox.list('u1', { status: 'all', archived: false, snoozed: true, limit: 5 })).data.map((m) => m.id)).toEqual([c.id, a.id])
    expect((await inbox.counts('u1', {}, [])).all).toEqual({ unreadCount: 0, unseenCount: 0, total: 0 })
    expect((await inbox.wakeDue(T0 + 10)).size).toBe(0)
    const woken = await inbox.wakeDue(T0 + 100)
    expect([...woken.keys()].sort()).toEqual(['u1', 'u2'])
    const u1 = woken.get('u1')!
    expect(kinds(u1)).toEqual(['9:notification', '10:notification', '11:unread_count'])
    expect(u1.slice(0, 2).map((e) => (e.data as { id: string; read: boolean }).id)).toEqual([a.id, c.id])
    expect((u1[0]!.data as { read: boolean }).read).toBe(false)
    expect(u1[2]!.data).toEqual({ unread_count: 2 })
    expect(await inbox.nextWake()).toBeNull()
    expect((await inbox.counts('u1', {}, [])).all).toEqual({ unreadCount: 2, unseenCount: 1, total: 2 })
    await inbox.snooze('u1', null, [a.id], T0 + 500, T0 + 101)
    expect(kinds((await inbox.changeState('u1', null, [a.id], 'unsnooze', T0 + 102)).events)).toEqual(['14:state', '15:unread_count'])
  })

  it('applies bulk changes by filter, naming the filter in its event', async () => {
    const inbox = b.inbox
    await inbox.insertMessage(msg('u1', { topic: 'a', tags: ['x'] }), T0)
    await inbox.insertMessage(msg('u1', { topic: 'a' }), T0)
    await inbox.insertMessage(msg('u1', { topic: 'b', tags: ['x', 'y'] }), T0)
    const r = await inbox.bulk('u1', 'read_all', { tags: ['x'] }, T0 + 1)
    expect(r).toEqual({
      updated: 2,
      events: [
        { seq: 7, kind: 'state', data: { change: 'read_all', filter: { topic: null, tags: ['x'], app_id: null, read: null }, updated: 2 } },
        { seq: 8, kind: 'unread_count', data: { unread_count: 1 } },
      ],
    })
    expect((await inbox.bulk('u1', 'seen_all', { topic: 'a' }, T0 + 2)).updated).toBe(1)
    expect((await inbox.bulk('u1', 'archive_all', { read: true }, T0 + 3)).updated).toBe(2)
    expect((await inbox.bulk('u1', 'archive_all', { appId: 'other' }, T0 + 3)).updated).toBe(0)
    expect((await inbox.counts('u1', {}, ['x'])).byTag.get('x')).toEqual({ unreadCount: 0, unseenCount: 0, total: 0 })
    expect((await inbox.counts('u1', {}, [])).all).toEqual({ unreadCount: 1, unseenCount: 0, total: 1 })
  })

  it('keeps counts exact when messages are deleted (retention), repeated tags included', async () => {
    const inbox = b.inbox
    await inbox.insertMessages([msg('u1', { topic: 'a', tags: ['x', 'x'] }), msg('u1', { topic: 'a', tags: ['y'] }), msg('u1', { topic: 'b' })], T0)
    const m = (await inbox.insertMessage(msg('u1', { topic: 'a', tags: ['x'] }), T0)).message
    await inbox.changeState('u1', null, [m.id], 'read', T0)
    expect((await inbox.counts('u1', {}, ['x', 'y'])).byTag.get('x')).toEqual({ unreadCount: 2, unseenCount: 2, total: 3 })
    await b.exec(`DELETE FROM inbox_messages WHERE user_id = 'u1' AND topic = 'a'`)
    const c = await inbox.counts('u1', {}, ['x', 'y'])
    expect(c.all).toEqual({ unreadCount: 1, unseenCount: 1, total: 1 })
    expect(c.byTag.get('x')).toEqual({ unreadCount: 1, unseenCount: 1, total: 1 })
    expect(c.byTag.get('y')).toEqual({ unreadCount: 0, unseenCount: 0, total: 0 })
    expect(await inbox.unreadCount('u1')).toBe(1)
  })

  it('replays the events after a Last-Event-ID: message events and log rows in id order', async () => {
    const inbox = b.inbox
    const live: StreamEvent[] = []
    const a = await inbox.insertMessage(msg('u1'), T0)
    live.push(...a.events)
    live.push(...(await inbox.insertMessages([msg('u1'), msg('u1')], T0 + 1)).get('u1')!)
    live.push(...(await inbox.changeState('u1', null, [a.message.id], 'read', T0 + 2)).events)
    live.push(await inbox.logUnreadCount('u1', T0 + 3))
    await inbox.snooze('u1', null, [a.message.id], T0 + 5, T0 + 4).then((r) => live.push(...r.events))
    live.push(...(await inbox.wakeDue(T0 + 5)).get('u1')!)
    expect(live.map((e) => e.seq)).toEqual(Array.from({ length: live.length }, (_, i) => i + 1))
    const replayed = await inbox.replay('u1', 0)
    expect(kinds(replayed)).toEqual(kinds(live))
    // Message events are replayed as the message is now (a: seen by its read, woken unread).
    const now = await inbox.get(a.message.id)
    expect(replayed[0]!.data).toEqual({ ...live[0]!.data, seen: true, seen_at: new Date(now!.seenAt!).toISOString() })
    expect(replayed.slice(1)).toEqual(live.slice(1))
    expect(await inbox.replay('u1', 3)).toEqual(live.slice(3))
    expect(await inbox.replay('u1', 4, 3)).toEqual(live.slice(4, 7))
    expect(await inbox.replay('u1', live.length)).toEqual([])
    expect(await inbox.replay('nobody', 0)).toEqual([])
  })

  it('keeps the last STREAM_LOG_SIZE events for replay', async () => {
    const inbox = b.inbox
    const m = (await inbox.insertMessage(msg('u1'), T0)).message
    for (let i = 0; i < STREAM_LOG_SIZE / 2 + 5; i++) await inbox.changeState('u1', null, [m.id], i % 2 ? 'unread' : 'read', T0 + i)
    const last = await inbox.lastSeq('u1')
    expect(last).toBe(2 + 2 * (STREAM_LOG_SIZE / 2 + 5))
    const events = await inbox.replay('u1', 0)
    expect(events).toHaveLength(STREAM_LOG_SIZE)
    expect(events[0]!.seq).toBe(last - STREAM_LOG_SIZE + 1)
    expect(events.at(-1)!.seq).toBe(last)
  })

  it('finds the message a notification left a user through its inbox delivery', async () => {
    await b.addDelivery({ id: 'dlv_n1', notificationId: 'ntf_1', recipient: 'u1', channel: 'inbox', status: 'success' })
    const m = (await b.inbox.insertMessage(msg('u1', { deliveryId: 'dlv_n1', notificationId: 'ntf_1' }), T0)).message
    expect(await b.inbox.messageOf('ntf_1', 'u1')).toBe(m.id)
    expect(await b.inbox.messageOf('ntf_1', 'u2')).toBeNull()
  })

  it('reads at most LIST_SCAN_LIMIT messages per filtered page and continues where it stopped', async () => {
    const inbox = b.inbox
    const message = (topic: string, i: number) => msg('u1', { deliveryId: `dlv_${topic}${i}`, topic })
    await inbox.insertMessages([message('rare', 0)], 1)
    await inbox.insertMessages(Array.from({ length: LIST_SCAN_LIMIT + 100 }, (_, i) => message('common', i)), 2)
    await inbox.insertMessages([message('rare', 1), message('common', -1)], 3)
    const filter = { status: 'all' as const, archived: false, topic: 'rare', limit: 10 }
    const first = await inbox.list('u1', filter)
    expect(first.data.map((m) => m.deliveryId)).toEqual(['dlv_rare1'])
    expect(first.nextCursor).not.toBeNull()
    const second = await inbox.list('u1', { ...filter, cursor: first.nextCursor })
    expect(second.data.map((m) => m.deliveryId)).toEqual(['dlv_rare0'])
    expect(second.nextCursor).toBeNull()
    const common = await inbox.list('u1', { status: 'all', archived: false, topic: 'common', limit: 2 })
    expect(common.data.map((m) => m.deliveryId)).toEqual(['dlv_common-1', `dlv_common${LIST_SCAN_LIMIT + 99}`])
  })
})

/** Message ids replaced by their order of appearance, so two backends' results compare. */
function normalise(value: unknown): unknown {
  const ids = new Map<string, string>()
  return JSON.parse(JSON.stringify(value, (_k, v) => (v instanceof Map ? Object.fromEntries(v) : v)), (_k, v) => {
    if (typeof v === 'string' && /^msg_[0-9a-z]{26}$/.test(v)) {
      if (!ids.has(v)) ids.set(v, `msg#${ids.size}`)
      return ids.get(v)
    }
    return v
  })
}

describe.runIf(PG_URL)('inbox: the same script gives the same results on both backends', () => {
  it('answers every call of a mixed script with equal values', async () => {
    const run = async (b: DirectoryBackend) => {
      const out: unknown[] = []
      const inbox = b.inbox
      const ids: string[] = []
      for (let i = 0; i < 5; i++) {
        const r = await inbox.insertMessage(msg('u1', { deliveryId: `d${i}`, tags: i % 2 ? ['a'] : ['a', 'b'], topic: `t${i % 2}`, payload: i ? { i } : null }), T0 + i)
        ids.push(r.message.id)
        out.push(r)
      }
      out.push(await inbox.insertMessages([msg('u1', { deliveryId: 'd9' }), msg('u2', { deliveryId: 'd10' }), msg('u1', { deliveryId: 'd1' })], T0 + 9))
      out.push(await inbox.changeState('u1', null, [ids[4]!, ids[0]!, ids[2]!], 'read', T0 + 10))
      out.push(await inbox.changeState('u1', null, [ids[1]!], 'clicked', T0 + 11))
      out.push(await inbox.snooze('u1', null, [ids[3]!, ids[4]!], T0 + 20, T0 + 12))
      out.push(await inbox.bulk('u1', 'seen_all', { tags: ['b'] }, T0 + 13))
      out.push(await inbox.bulk('u1', 'archive_all', { topic: 't0', read: true }, T0 + 13))
      out.push(await inbox.counts('u1', {}, ['a', 'b', 'c']))
      out.push(await inbox.counts('u1', { topic: 't1' }, ['a']))
      out.push(await inbox.nextWake())
      out.push(await inbox.wakeDue(T0 + 30))
      out.push(await inbox.list('u1', { status: 'all', archived: false, limit: 3 }).then((l) => l.data))
      out.push(await inbox.list('u1', { status: 'all', archived: true, limit: 3 }).then((l) => l.data))
      out.push(await inbox.list('u1', { status: 'unread', archived: false, tags: ['b'], limit: 3 }).then((l) => l.data))
      out.push(await inbox.replay('u1', 0))
      out.push(await inbox.replay('u2', 0))
      out.push(await inbox.unreadCount('u1'), await inbox.lastSeq('u1'))
      return normalise(out)
    }
    const [lite, pg] = await Promise.all([openSqliteBackend(), openPgBackend()])
    try {
      const a = await run(lite)
      const b = await run(pg)
      expect(b).toEqual(a)
    } finally {
      await Promise.all([lite.close(), pg.close()])
    }
  })
})

/** One random step of the differential property: which call, on which user and messages. */
type Op =
  | { op: 'insert'; user: number; delivery: number | null; topic: number; tags: string[]; app: number }
  | { op: 'batch'; items: { user: number; delivery: number | null; topic: number; tags: string[] }[] }
  | { op: 'change'; user: number; picks: number[]; change: 'read' | 'unread' | 'seen' | 'archive' | 'unarchive' | 'clicked' | 'unsnooze'; app: boolean }
  | { op: 'snooze'; user: number; picks: number[]; until: number }
  | { op: 'bulk'; user: number; change: 'read_all' | 'seen_all' | 'archive_all'; topic: number | null; tags: string[] | null; read: boolean | null }
  | { op: 'wake'; after: number }
  | { op: 'unreadLog'; user: number }

const USERS = ['u0', 'u1', 'u2']
const tagsArb = fc.subarray(['a', 'b', 'c'])
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('insert' as const), user: fc.nat(2), delivery: fc.option(fc.nat(30)), topic: fc.nat(1), tags: tagsArb, app: fc.nat(1) }),
  fc.record({
    op: fc.constant('batch' as const),
    items: fc.array(fc.record({ user: fc.nat(2), delivery: fc.option(fc.nat(30)), topic: fc.nat(1), tags: tagsArb }), { maxLength: 6 }),
  }),
  fc.record({
    op: fc.constant('change' as const),
    user: fc.nat(2),
    picks: fc.array(fc.nat(40), { minLength: 1, maxLength: 5 }),
    change: fc.constantFrom('read', 'unread', 'seen', 'archive', 'unarchive', 'clicked', 'unsnooze'),
    app: fc.boolean(),
  }),
  fc.record({ op: fc.constant('snooze' as const), user: fc.nat(2), picks: fc.array(fc.nat(40), { minLength: 1, maxLength: 5 }), until: fc.integer({ min: 1, max: 30 }) }),
  fc.record({
    op: fc.constant('bulk' as const),
    user: fc.nat(2),
    change: fc.constantFrom('read_all', 'seen_all', 'archive_all'),
    topic: fc.option(fc.nat(1)),
    tags: fc.option(tagsArb.filter((t) => t.length > 0)),
    read: fc.option(fc.boolean()),
  }),
  fc.record({ op: fc.constant('wake' as const), after: fc.integer({ min: 1, max: 30 }) }),
  fc.record({ op: fc.constant('unreadLog' as const), user: fc.nat(2) }),
)

/** Runs `ops` on one backend; every answer, and after each step every user's counts, list and replay. */
async function script(b: DirectoryBackend, ops: Op[]): Promise<unknown> {
  const inbox = b.inbox
  // Each user's messages, oldest first: picks name a user's own messages (mostly) by index.
  const made: string[][] = USERS.map(() => [])
  const pick = (user: number, picks: number[]) => picks.flatMap((k) => {
    const own = made[k % 5 === 4 ? (user + 1) % USERS.length : user]!
    return own.length > 0 ? [own[k % own.length]!] : []
  })
  const out: unknown[] = []
  const item = (user: number, delivery: number | null, topic: number, tags: string[], app = 0): NewInboxMessage => ({
    ...msg(USERS[user]!, { deliveryId: delivery === null ? null : `dlv_p${delivery}`, topic: `t${topic}`, tags, appId: app ? 'a1' : 'default' }),
  })
  let now = T0
  for (const o of ops) {
    now += 1
    if (o.op === 'insert') {
      const r = await inbox.insertMessage(item(o.user, o.delivery, o.topic, o.tags, o.app), now)
      if (r.created) made[o.user]!.push(r.message.id)
      out.push(r)
    } else if (o.op === 'batch') {
      const r = await inbox.insertMessages(o.items.map((i) => item(i.user, i.delivery, i.topic, i.tags)), now)
      USERS.forEach((u, i) => {
        for (const e of r.get(u) ?? []) if (e.kind === 'notification') made[i]!.push((e.data as { id: string }).id)
      })
      out.push(USERS.map((u) => r.get(u) ?? null))
    } else if (o.op === 'change') {
      out.push(await inbox.changeState(USERS[o.user]!, o.app ? 'a1' : null, pick(o.user, o.picks), o.change, now))
    } else if (o.op === 'snooze') {
      const ids = pick(o.user, o.picks)
      out.push(await inbox.snooze(USERS[o.user]!, null, ids, now + o.until, now))
    } else if (o.op === 'bulk') {
      out.push(await inbox.bulk(USERS[o.user]!, o.change, { topic: o.topic === null ? null : `t${o.topic}`, tags: o.tags, read: o.read }, now))
    } else if (o.op === 'wake') {
      out.push(await inbox.nextWake())
      const r = await inbox.wakeDue(now + o.after)
      out.push(USERS.map((u) => r.get(u) ?? null))
    } else {
      out.push(await inbox.logUnreadCount(USERS[o.user]!, now))
    }
  }
  for (const u of USERS) {
    out.push(await inbox.counts(u, {}, ['a', 'b', 'c']), await inbox.counts(u, { topic: 't1', appId: 'default' }, ['a']))
    out.push(await inbox.unreadCount(u), await inbox.lastSeq(u), await inbox.replay(u, 0), await inbox.replay(u, 3, 4))
    for (const archived of [false, true]) {
      for (const status of ['all', 'unread', 'read'] as const) out.push((await inbox.list(u, { status, archived, limit: 50 })).data)
      out.push((await inbox.list(u, { status: 'all', archived, tags: ['b'], limit: 50 })).data)
    }
    out.push((await inbox.list(u, { status: 'all', archived: false, snoozed: true, limit: 50 })).data)
  }
  return normalise(out)
}

describe.runIf(PG_URL)('inbox property: random scripts give equal answers on both backends', () => {
  let lite: DirectoryBackend
  let pgb: DirectoryBackend
  beforeAll(async () => {
    ;[lite, pgb] = await Promise.all([openSqliteBackend(), openPgBackend()])
  })
  afterAll(() => Promise.all([lite.close(), pgb.close()]))

  it('answers every call, and leaves every count, list and replay, alike', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 60 }), async (ops) => {
        await Promise.all([lite.reset(), pgb.reset()])
        const a = await script(lite, ops)
        const b = await script(pgb, ops)
        expect(b).toEqual(a)
      }),
      { numRuns: 25 },
    )
  }, 120_000)
})

describe.runIf(PG_URL)('inbox on PostgreSQL, three nodes writing one database', () => {
  let b: Awaited<ReturnType<typeof openPgBackend>>
  beforeAll(async () => {
    b = await openPgBackend()
  })
  afterAll(() => b.close())

  it('gives every event of a user a distinct id from the database, in commit order, exact counts and a full replay', async () => {
    const pools = [numberPool(b.url, 3), numberPool(b.url, 3), numberPool(b.url, 3)]
    try {
      const nodes = pools.map((p) => pgFamilies(p).inbox)
      const live: StreamEvent[] = []
      const messages: InboxMessage[] = []
      // Singles, batches to overlapping users in opposite orders, and state changes, all at once.
      await Promise.all(
        Array.from({ length: 30 }, async (_, i) => {
          const node = nodes[i % 3]!
          if (i % 3 === 0) {
            const r = await node.insertMessage(msg('u1'), T0 + i)
            messages.push(r.message)
            live.push(...r.events)
          } else {
            const batch = i % 2 ? [msg('u1'), msg('u2'), msg('u3')] : [msg('u3'), msg('u2'), msg('u1')]
            const out = await node.insertMessages(batch, T0 + i)
            live.push(...out.get('u1')!)
          }
          const state = await node.logUnreadCount('u1', T0 + i)
          live.push(state)
        }),
      )
      const seqs = live.map((e) => e.seq).sort((x, y) => x - y)
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1))
      expect(await nodes[0]!.lastSeq('u1')).toBe(seqs.length)
      // 10 singles + 20 batch messages for u1.
      expect(await nodes[1]!.unreadCount('u1')).toBe(30)
      expect((await nodes[2]!.counts('u1', {}, [])).all).toEqual({ unreadCount: 30, unseenCount: 30, total: 30 })
      const replayed = await nodes[2]!.replay('u1', 0)
      expect(replayed.map((e) => e.seq)).toEqual(seqs)
      // A message's list position is its id: the list is in id order, newest first.
      const listed = (await nodes[0]!.list('u1', { status: 'all', archived: false, limit: 100 })).data
      expect(listed).toHaveLength(30)
      const notified = replayed.filter((e) => e.kind === 'notification').map((e) => (e.data as { id: string }).id)
      expect(listed.map((m) => m.id)).toEqual(notified.reverse())
      // Concurrent read/unread flips and a wake-up race: the count stays exact.
      const target = messages.map((m) => m.id)
      await Promise.all(nodes.map((node, k) => node.changeState('u1', null, target, k === 1 ? 'unread' : 'read', T0 + 100)))
      await Promise.all(nodes.map((node) => node.snooze('u1', null, target.slice(0, 3), T0 + 200, T0 + 101)))
      const wakes = await Promise.all(nodes.map((node) => node.wakeDue(T0 + 300)))
      expect(wakes.reduce((s, w) => s + (w.get('u1')?.filter((e) => e.kind === 'notification').length ?? 0), 0)).toBe(3)
      const list = (await nodes[0]!.list('u1', { status: 'unread', archived: false, limit: 100 })).data.length
      expect(await nodes[0]!.unreadCount('u1')).toBe(list)
      expect((await nodes[0]!.counts('u1', {}, [])).all.unreadCount).toBe(list)
    } finally {
      await Promise.all(pools.map((p) => p.end()))
    }
  })

  it('writes a delivery once when two nodes write it at the same time (a re-claim race), ids contiguous', async () => {
    const pools = [numberPool(b.url, 2), numberPool(b.url, 2)]
    try {
      const nodes = pools.map((p) => pgFamilies(p).inbox)
      const batch = (k: number) => [msg('r1', { deliveryId: `race${k}` }), msg('r2', { deliveryId: `race${k}b` })]
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, k) => Promise.all([nodes[0]!.insertMessages(batch(k), T0), nodes[1]!.insertMessage(batch(k)[0]!, T0)])),
      )
      const created = results.flatMap(([many, one]) => [...(many.get('r1') ?? []), ...one.events].filter((e) => e.kind === 'notification'))
      expect(created).toHaveLength(10)
      expect(await nodes[0]!.lastSeq('r1')).toBe(20)
      expect((await nodes[1]!.replay('r1', 0)).map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
      expect(await nodes[1]!.unreadCount('r1')).toBe(10)
      expect(await nodes[1]!.lastSeq('r2')).toBe(20)
    } finally {
      await Promise.all(pools.map((p) => p.end()))
    }
  })

  it("tells every node, at commit, whose stream grew: node B replays what node A wrote", async () => {
    const [a, bNode] = [numberPool(b.url, 2), numberPool(b.url, 2)]
    const listener = new pg.Client({ connectionString: b.url })
    await listener.connect()
    try {
      const notices: string[] = []
      listener.on('notification', (n) => n.channel === INBOX_NOTIFY_CHANNEL && notices.push(n.payload!))
      await listener.query(`LISTEN ${INBOX_NOTIFY_CHANNEL}`)
      const nodeA = pgFamilies(a).inbox
      const nodeB = pgFamilies(bNode).inbox
      const sentB = await nodeB.lastSeq('n1')
      const out = await nodeA.insertMessages([msg('n1'), msg('n2'), msg('n1')], T0)
      const m = out.get('n1')![0]!.data as { id: string }
      const change = await nodeA.changeState('n1', null, [m.id], 'read', T0 + 1)
      // A rolled-back write tells nobody.
      const tx = await a.connect()
      await tx.query('BEGIN')
      await pgFamilies(tx).inbox.insertMessage(msg('n3'), T0)
      await tx.query('ROLLBACK')
      tx.release()
      // Each statement that adds events tells once: the batch per user, the change's two log rows.
      for (let i = 0; i < 100 && notices.length < 4; i++) await new Promise((r) => setTimeout(r, 20))
      await new Promise((r) => setTimeout(r, 50))
      expect(notices.sort()).toEqual(['2:n2', '4:n1', '5:n1', '6:n1'])
      const latest = Math.max(...notices.filter((p) => p.endsWith(':n1')).map((p) => Number(p.split(':')[0])))
      expect(latest).toBe(await nodeB.lastSeq('n1'))
      const replayed = await nodeB.replay('n1', sentB)
      expect(kinds(replayed)).toEqual([...kinds(out.get('n1')!), ...kinds(change.events)])
    } finally {
      await listener.end()
      await Promise.all([a.end(), bNode.end()])
    }
  })
})

describe.runIf(PG_URL)('inbox query plans on PostgreSQL', () => {
  let b: Awaited<ReturnType<typeof openPgBackend>>
  let client: pg.PoolClient
  let pool: pg.Pool
  beforeAll(async () => {
    b = await openPgBackend()
    pool = numberPool(b.url, 1)
    client = await pool.connect()
    // A few thousand messages over many users, with statistics: plans as a real inbox gets them.
    const inbox = pgFamilies(client).inbox
    for (let k = 0; k < 4; k++) await inbox.insertMessages(Array.from({ length: 1000 }, (_, i) => msg(i % 2 ? 'u' : `other${i}`)), T0 + k)
    await client.query('ANALYZE')
    await client.query('SET enable_seqscan = off')
  })
  afterAll(async () => {
    client.release()
    await pool.end()
    await b.close()
  })
  const plan = async (sql: string, values: unknown[]) =>
    (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, values)).rows.map((r) => r['QUERY PLAN']).join('\n')

  it('changes by id through the primary key, bulk reads through the unread index, wake-ups through the snooze index', async () => {
    const { PG_INBOX_SQL: S } = await import('./inbox.js')
    for (const name of ['read', 'unreadState', 'seen', 'archive', 'clicked'] as const) {
      const values = S[name].includes('$4') ? ['u', null, ['msg_x'], 1] : ['u', null, ['msg_x']]
      expect(await plan(S[name], values), name).toMatch(/inbox_messages_pkey/)
    }
    expect(await plan(S.readAll, ['u', 1, null, null, null, null])).toMatch(/inbox_unread/)
    expect(await plan(S.dueToWake, [1, 10])).toMatch(/inbox_snoozed/)
    expect(await plan(S.existing, [['d']])).toMatch(/inbox_messages_delivery_id_key/)
  })

  it('reads a list page and a replay in index order, without a sort', async () => {
    const { PG_REPLAY_SQL } = await import('./inbox-replay.js')
    const list = await plan(`SELECT seq FROM inbox_messages WHERE user_id = $1 AND archived = $2 AND snoozed_until IS NULL AND seq < $3 ORDER BY seq DESC LIMIT 51`, ['u', 0, 99])
    expect(list).toMatch(/Index Scan Backward using inbox_user/)
    expect(list).not.toMatch(/Sort/)
    const replay = await plan(PG_REPLAY_SQL, ['u', 0, 1000])
    expect(replay).toMatch(/inbox_stream_pkey/)
    expect(replay).toMatch(/inbox_user/)
  })
})
