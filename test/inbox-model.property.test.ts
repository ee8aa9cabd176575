import { afterEach, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { sweepRetention } from '../src/store/sqlite/retention.js'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'

/**
 * The inbox against a plain in-memory model: random sequences of notifications, state changes
 * by id, snoozes with the clock moving past their wake-up, bulk changes by filter and retention,
 * for several users, apps and tags. After every step each user's lists and counts (over every
 * app and through an app-limited token, for every tag and topic) must equal the model's.
 */

const USERS = ['ann', 'bob', 'cy'] as const
const APPS = ['default', 'a1'] as const
const TOPICS = ['t.one', 't.two'] as const
const TAGS = ['billing', 'social', 'ops'] as const
const RETENTION_MS = 30 * 60_000

interface Msg {
  id: string
  user: string
  app: string
  topic: string
  tags: string[]
  createdAt: number
  read: boolean
  seen: boolean
  clicked: boolean
  archived: boolean
  snoozedUntil: number | null
}

type Change = 'read' | 'unread' | 'seen' | 'archive' | 'unarchive' | 'clicked' | 'unsnooze'
type Bulk = 'readAll' | 'seenAll' | 'archiveAll'
interface Filter {
  topic?: string
  tags?: string[]
  app_id?: string
  read?: boolean
}

type Cmd =
  | { kind: 'notify'; users: string[]; app: string; topic: string; tags: string[] }
  | { kind: 'change'; change: Change; user: string; scoped: boolean; picks: number[] }
  | { kind: 'snooze'; user: string; scoped: boolean; picks: number[]; forMs: number }
  | { kind: 'bulk'; bulk: Bulk; user: string; scoped: boolean; filter: Filter }
  | { kind: 'advance'; ms: number }
  | { kind: 'retention' }

const user = fc.constantFrom(...USERS)
const picks = fc.array(fc.nat(1000), { minLength: 1, maxLength: 4 })
const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('notify' as const), users: fc.subarray([...USERS], { minLength: 1 }), app: fc.constantFrom(...APPS), topic: fc.constantFrom(...TOPICS), tags: fc.subarray([...TAGS]) }) },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('change' as const),
      change: fc.constantFrom<Change>('read', 'unread', 'seen', 'archive', 'unarchive', 'clicked', 'unsnooze'),
      user,
      scoped: fc.boolean(),
      picks,
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('snooze' as const), user, scoped: fc.boolean(), picks, forMs: fc.integer({ min: 1000, max: 20 * 60_000 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('bulk' as const),
      bulk: fc.constantFrom<Bulk>('readAll', 'seenAll', 'archiveAll'),
      user,
      scoped: fc.boolean(),
      filter: fc.record(
        { topic: fc.constantFrom(...TOPICS), tags: fc.subarray([...TAGS], { minLength: 1 }), app_id: fc.constantFrom(...APPS), read: fc.boolean() },
        { requiredKeys: [] },
      ),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 15 * 60_000 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'retention' as const }) },
)

let h: NotifyHarness | null = null
afterEach(async () => {
  await h?.cleanup()
  h = null
})

/** The model's answer to a filter (bulk changes never reach a snoozed message). */
const matches = (m: Msg, f: Filter, scope: string | null): boolean =>
  (scope === null || m.app === scope) &&
  (f.topic === undefined || m.topic === f.topic) &&
  (f.app_id === undefined || m.app === f.app_id) &&
  (f.read === undefined || m.read === f.read) &&
  (f.tags === undefined || f.tags.length === 0 || m.tags.some((t) => f.tags!.includes(t)))

async function run(cmds: Cmd[]): Promise<void> {
  await h?.cleanup()
  h = await notifyHarness()
  const { notify, clock, store } = h
  const model: Msg[] = []
  const visible = (m: Msg) => !m.archived && m.snoozedUntil === null
  const wake = () => {
    for (const m of model) {
      if (m.snoozedUntil !== null && m.snoozedUntil <= clock.now()) {
        m.snoozedUntil = null
        m.read = false
      }
    }
  }
  const own = (u: string, scoped: boolean, ids: number[]) => {
    // Picks range over every message, so other users' and other apps' ids are tried too.
    if (model.length === 0) return { ids: [] as string[], mine: [] as Msg[] }
    const chosen = [...new Set(ids.map((i) => model[i % model.length]!))]
    return { ids: chosen.map((m) => m.id), mine: chosen.filter((m) => m.user === u && (!scoped || m.app === 'a1')) }
  }
  const inboxOf = (u: string, scoped: boolean) => notify.inbox(u, scoped ? 'a1' : null)

  const check = async (step: number) => {
    for (const u of USERS) {
      for (const scope of [null, 'a1'] as const) {
        const inbox = inboxOf(u, scope !== null)
        const mine = model.filter((m) => m.user === u && (scope === null || m.app === scope))
        const counts = (ms: Msg[]) => ({
          unread_count: ms.filter((m) => visible(m) && !m.read).length,
          unseen_count: ms.filter((m) => visible(m) && !m.seen).length,
          total: ms.filter(visible).length,
        })
        const byTag = (ms: Msg[]) => Object.fromEntries(TAGS.map((t) => [t, counts(ms.filter((m) => m.tags.includes(t)))]))
        const at = `step ${step}, ${u}, scope ${scope}`
        expect(await inbox.counts({ tags: [...TAGS] }), at).toEqual({ ...counts(mine), by_tag: byTag(mine) })
        for (const topic of TOPICS) {
          const of = mine.filter((m) => m.topic === topic)
          expect(await inbox.counts({ tags: [...TAGS], topic }), `${at}, ${topic}`).toEqual({ ...counts(of), by_tag: byTag(of) })
        }
        expect(await inbox.unreadCount(), at).toBe(counts(mine).unread_count)
        const listed = (o: Parameters<typeof inbox.list>[0]) => inbox.list({ limit: 200, ...o })
        const shape = (m: Msg) => ({ id: m.id, read: m.read, seen: m.seen, archived: m.archived, clicked: m.clicked })
        const got = (data: Awaited<ReturnType<typeof inbox.list>>['data']) =>
          data.map((d) => ({ id: d.id, read: d.read, seen: d.seen, archived: d.archived, clicked: d.clicked_at !== null }))
        const newest = [...mine].reverse()
        expect(got((await listed({})).data), `${at} list`).toEqual(newest.filter(visible).map(shape))
        expect(got((await listed({ archived: true })).data), `${at} archived`).toEqual(newest.filter((m) => m.archived && m.snoozedUntil === null).map(shape))
        expect(got((await listed({ snoozed: true })).data), `${at} snoozed`).toEqual(newest.filter((m) => !m.archived && m.snoozedUntil !== null).map(shape))
        expect(got((await listed({ status: 'unread', tags: ['billing', 'ops'] })).data), `${at} unread by tag`).toEqual(
          newest.filter((m) => visible(m) && !m.read && (m.tags.includes('billing') || m.tags.includes('ops'))).map(shape),
        )
        expect((await listed({})).unread_count, at).toBe(counts(mine).unread_count)
      }
    }
  }

  for (const [step, c] of cmds.entries()) {
    wake()
    switch (c.kind) {
      case 'notify': {
        const r = await notify.notifications.send({ topic: c.topic, recipients: c.users, app_id: c.app, tags: c.tags, title: 'hi' })
        const rows = store.sqlite!.db.prepare(`SELECT id, user_id AS user FROM inbox_messages WHERE notification_id = ? ORDER BY rowid`).all(r.id) as { id: string; user: string }[]
        expect(rows.map((x) => x.user)).toEqual(c.users)
        for (const row of rows) {
          model.push({ id: row.id, user: row.user, app: c.app, topic: c.topic, tags: c.tags, createdAt: clock.now(), read: false, seen: false, clicked: false, archived: false, snoozedUntil: null })
        }
        break
      }
      case 'change': {
        const { ids, mine } = own(c.user, c.scoped, c.picks)
        if (ids.length === 0) break
        const apply: Record<Change, (m: Msg) => boolean> = {
          read: (m) => !m.read && ((m.read = true), (m.seen = true)),
          unread: (m) => m.read && !(m.read = false),
          seen: (m) => !m.seen && (m.seen = true),
          archive: (m) => !m.archived && (m.archived = true),
          unarchive: (m) => m.archived && !(m.archived = false),
          clicked: (m) => (!m.clicked || !m.read) && ((m.clicked = true), (m.read = true), (m.seen = true)),
          unsnooze: (m) => m.snoozedUntil !== null && ((m.snoozedUntil = null), true),
        }
        const expected = mine.filter((m) => apply[c.change](m)).length
        expect(await inboxOf(c.user, c.scoped)[c.change](ids), `step ${step} ${c.change}`).toEqual({ updated: expected })
        break
      }
      case 'snooze': {
        const { ids, mine } = own(c.user, c.scoped, c.picks)
        if (ids.length === 0) break
        const until = clock.now() + c.forMs
        const expected = mine.filter((m) => m.snoozedUntil !== until && ((m.snoozedUntil = until), true)).length
        expect(await inboxOf(c.user, c.scoped).snooze(ids, until), `step ${step} snooze`).toEqual({ updated: expected })
        break
      }
      case 'bulk': {
        const scope = c.scoped ? 'a1' : null
        if (scope !== null && c.filter.app_id !== undefined && c.filter.app_id !== scope) {
          // Another application than the token's is 404, as if it did not exist.
          await expect(inboxOf(c.user, true)[c.bulk](c.filter)).rejects.toThrow(/Application not found/)
          break
        }
        const hit = model.filter((m) => m.user === c.user && m.snoozedUntil === null && matches(m, c.filter, scope))
        const apply: Record<Bulk, (m: Msg) => boolean> = {
          readAll: (m) => !m.read && ((m.read = true), (m.seen = true)),
          seenAll: (m) => !m.seen && (m.seen = true),
          archiveAll: (m) => !m.archived && (m.archived = true),
        }
        const expected = hit.filter((m) => apply[c.bulk](m)).length
        expect(await inboxOf(c.user, c.scoped)[c.bulk](c.filter), `step ${step} ${c.bulk}`).toEqual({ updated: expected })
        break
      }
      case 'advance':
        clock.advance(c.ms)
        break
      case 'retention': {
        const before = clock.now() - RETENTION_MS
        sweepRetention(store.sqlite!, { now: clock.now(), successMs: 86_400_000, deadMs: 86_400_000, inboxMs: RETENTION_MS, eventsMs: 86_400_000 })
        for (let i = model.length - 1; i >= 0; i--) if (model[i]!.createdAt < before) model.splice(i, 1)
        break
      }
    }
    wake()
    await check(step)
  }
  // The counter rows agree with a recount from scratch too.
  const recount = store.sqlite!.db
    .prepare(
      `SELECT user_id, sum(archived = 0 AND snoozed_until IS NULL AND read = 0) AS unread FROM inbox_messages GROUP BY user_id`,
    )
    .all() as { user_id: string; unread: number }[]
  for (const r of recount) expect(await store.inbox.unreadCount(r.user_id)).toBe(r.unread)
}

describe('inbox model', () => {
  it('lists and counts match a plain model after every step', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 5, maxLength: 40 }), (cmds) => run(cmds)),
      { numRuns: 60 },
    )
  }, 120_000)
})
