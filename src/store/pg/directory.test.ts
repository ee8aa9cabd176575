import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { PreferenceRow, SubscriptionKey, SubscriptionRow } from '../directory.js'
import { BACKENDS, numberPool, openPgBackend, openSqliteBackend, pgFamilies, type DirectoryBackend } from '../../../test/support/pg-directory-backends.js'
import { PG_URL } from '../../../test/support/pg.js'
import fc from 'fast-check'

const T0 = Date.UTC(2026, 0, 1)
const TOPICS = ['deploy.done', 'build.failed', 'alert:high']
const pref = (userId: string, topic: string, enabled: boolean, channel = 'email', updatedAt = 0): PreferenceRow => ({
  userId,
  topic,
  channel,
  enabled,
  digest: 'none',
  quietHours: null,
  updatedAt,
})

describe.each(BACKENDS)('directory contract on $name', ({ open }) => {
  let b: DirectoryBackend
  beforeAll(async () => {
    b = await open()
  })
  afterAll(() => b.close())
  beforeEach(() => b.reset())

  describe('users', () => {
    it('creates, then updates only the given fields, and mirrors roles and teams for members', async () => {
      const d = b.directory
      const first = await d.putUser('u2', { email: 'Ann@Example.com', name: 'Ann', roles: ['admin', 'admin', 'ops'], teams: ['t1'] }, T0)
      expect(first).toEqual({
        created: true,
        user: { id: 'u2', email: 'Ann@Example.com', name: 'Ann', locale: null, timezone: null, roles: ['admin', 'ops'], teams: ['t1'], createdAt: T0, updatedAt: T0 },
      })
      await d.putUser('u1', { roles: ['ops'] }, T0 + 1)
      const second = await d.putUser('u2', { locale: 'de', roles: ['ops'] }, T0 + 5)
      expect(second.created).toBe(false)
      expect(second.user).toEqual({ ...first.user, locale: 'de', roles: ['ops'], updatedAt: T0 + 5 })
      // An explicit null clears a field; absent keeps it.
      expect((await d.putUser('u2', { name: null }, T0 + 6)).user).toMatchObject({ name: null, email: 'Ann@Example.com', locale: 'de', teams: ['t1'] })
      expect(await d.members('role', 'ops')).toEqual([
        { id: 'u1', email: null, name: null, locale: null, timezone: null },
        { id: 'u2', email: 'Ann@Example.com', name: null, locale: 'de', timezone: null },
      ])
      expect(await d.members('role', 'admin')).toEqual([])
      expect((await d.members('team', 't1')).map((m) => m.id)).toEqual(['u2'])
      expect(await d.getUser('nobody')).toBeNull()
      expect((await d.getUser('u2'))?.updatedAt).toBe(T0 + 6)
    })

    it('finds a user by email, ASCII case folded, the oldest first', async () => {
      const d = b.directory
      await d.putUser('b', { email: 'x@EXAMPLE.com' }, T0 + 2)
      await d.putUser('a', { email: 'X@example.com' }, T0 + 1)
      await d.putUser('c', { email: 'Ü@example.com' }, T0)
      expect((await d.userByEmail('x@example.COM'))?.id).toBe('a')
      expect(await d.userByEmail('ü@example.com')).toBeNull()
      expect((await d.userByEmail('Ü@example.com'))?.id).toBe('c')
      expect(await d.userByEmail('none@example.com')).toBeNull()
    })

    it('deletes a user with their subscriptions, preferences and groups', async () => {
      const d = b.directory
      await d.putUser('u1', { roles: ['r'] }, T0)
      await d.putSubscription('t', 'user:u1', T0)
      await d.putSubscription('t', 'role:r', T0)
      await d.putPreference(pref('u1', 't', false))
      expect(await d.deleteUser('u1')).toBe(true)
      expect(await d.deleteUser('u1')).toBe(false)
      expect(await d.subscribers('t')).toEqual(['role:r'])
      expect(await d.preferencesOfUser('u1')).toEqual([])
      expect(await d.members('role', 'r')).toEqual([])
    })
  })

  describe('subscriptions', () => {
    it('keeps the first creation time on update, and lists enabled subscribers oldest first', async () => {
      const d = b.directory
      expect(await d.putSubscription('t', 'user:b', T0 + 1)).toEqual({ topic: 't', principal: 'user:b', enabled: true, createdAt: T0 + 1 })
      await d.putSubscription('t', 'user:a', T0 + 1)
      await d.putSubscription('t', 'role:z', T0)
      await d.putSubscription('t', 'team:off', T0, false)
      expect(await d.putSubscription('t', 'user:b', T0 + 9, true)).toEqual({ topic: 't', principal: 'user:b', enabled: true, createdAt: T0 + 1 })
      expect(await d.subscribers('t')).toEqual(['role:z', 'user:a', 'user:b'])
      expect((await d.putSubscription('t', 'user:a', T0 + 9, false)).enabled).toBe(false)
      expect(await d.subscribers('t')).toEqual(['role:z', 'user:b'])
      expect(await d.deleteSubscription('t', 'user:b')).toBe(true)
      expect(await d.deleteSubscription('t', 'user:b')).toBe(false)
      expect((await d.listSubscriptions('t')).map((s) => [s.principal, s.enabled])).toEqual([
        ['user:a', false],
        ['role:z', true],
        ['team:off', false],
      ])
    })

    /** 90 subscriptions over three topics in shuffled order, two thirds of them in the same millisecond. */
    async function seed(): Promise<SubscriptionRow[]> {
      const rows: SubscriptionRow[] = []
      for (let i = 0; i < 90; i++) {
        const n = (i * 37) % 90
        const createdAt = n < 60 ? T0 + 5 : T0 + (n % 4)
        rows.push(await b.directory.putSubscription(TOPICS[n % 3]!, `user:u${(n * 7) % 90}`, createdAt))
      }
      return rows
    }
    const byListOrder = (a: SubscriptionRow, b: SubscriptionRow): number =>
      b.createdAt - a.createdAt || (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0) || (a.principal < b.principal ? -1 : a.principal > b.principal ? 1 : 0)
    const keyOf = (r: SubscriptionRow): string => `${r.topic} ${r.principal}`
    async function walk(topic: string | undefined, limit: number): Promise<SubscriptionRow[][]> {
      const pages: SubscriptionRow[][] = []
      let after: SubscriptionKey | null = null
      for (let i = 0; i < 100; i++) {
        const page = await b.directory.listSubscriptions(topic, { limit, after })
        if (page.length === 0) return pages
        pages.push(page)
        after = page[page.length - 1]!
      }
      throw new Error('too many pages')
    }

    it('pages the whole list and one topic by sort key, newest first, ties in key order', async () => {
      const rows = await seed()
      const pages = await walk(undefined, 7)
      expect(pages.slice(0, -1).every((p) => p.length === 7)).toBe(true)
      expect(pages.flat().map(keyOf)).toEqual([...rows].sort(byListOrder).map(keyOf))
      for (const topic of TOPICS) {
        expect((await walk(topic, 4)).flat().map(keyOf), topic).toEqual(rows.filter((r) => r.topic === topic).sort(byListOrder).map(keyOf))
      }
    })

    it('keeps its place when rows are added or the last row is deleted between pages', async () => {
      await seed()
      const d = b.directory
      const first = await d.listSubscriptions(undefined, { limit: 10 })
      const after = first[first.length - 1]!
      await d.putSubscription('build.failed', 'user:newest', T0 + 100)
      const rest = (await d.listSubscriptions(undefined, { limit: -1, after })).map(keyOf)
      expect(rest).toHaveLength(80)
      await d.deleteSubscription(after.topic, after.principal)
      expect((await d.listSubscriptions(undefined, { limit: -1, after })).map(keyOf)).toEqual(rest)
    })

    it('orders bytewise, as SQLite does (upper case before lower, ASCII before the rest)', async () => {
      for (const p of ['user:b', 'user:B', 'user:é', 'user:a', 'user:_']) await b.directory.putSubscription('t', p, T0)
      expect(await b.directory.subscribers('t')).toEqual(['user:B', 'user:_', 'user:a', 'user:b', 'user:é'])
    })
  })

  describe('preferences', () => {
    it('upserts, lists a user newest first with a window, and gives the rows that may apply', async () => {
      const d = b.directory
      const q = { tz: 'Europe/Berlin', start: '22:00', end: '07:00' }
      expect(await d.putPreference({ ...pref('u1', 'a', true, 'email', 3), quietHours: q })).toMatchObject({ quietHours: q })
      await d.putPreference(pref('u1', 'b', false, 'inbox', 5))
      await d.putPreference(pref('u1', '*', false, '*', 5))
      await d.putPreference(pref('*', 'a', false, 'email', 1))
      await d.putPreference({ ...pref('u1', 'a', false, 'email', 9), digest: 'daily' })
      expect((await d.preferencesOfUser('u1')).map((p) => [p.topic, p.channel, p.updatedAt])).toEqual([
        ['a', 'email', 9],
        ['*', '*', 5],
        ['b', 'inbox', 5],
      ])
      expect((await d.preferencesOfUser('u1', { limit: 1, offset: 1 })).map((p) => p.topic)).toEqual(['*'])
      expect(await d.preferencesFor('u1', 'a')).toEqual([
        { userId: '*', topic: 'a', channel: 'email', enabled: false, digest: 'none', quietHours: null, updatedAt: 1 },
        { userId: 'u1', topic: '*', channel: '*', enabled: false, digest: 'none', quietHours: null, updatedAt: 5 },
        { userId: 'u1', topic: 'a', channel: 'email', enabled: false, digest: 'daily', quietHours: null, updatedAt: 9 },
      ])
    })

    it("gives each recipient of a topic its own rows plus the global ones, for a short list and for a huge one", async () => {
      const d = b.directory
      await d.putPreference(pref('*', 'billing', false))
      await d.putPreference(pref('u1', 'billing', true))
      await d.putPreference(pref('u2', '*', false))
      await d.putPreference(pref('u3', 'other', false))
      const few = await d.preferencesForTopic('billing', ['u1', 'u2', 'u3', 'u4'])
      const many = await d.preferencesForTopic('billing', Array.from({ length: 20_001 }, (_, i) => `u${i}`))
      for (const lookup of [few, many]) {
        expect(lookup('u1').map((p) => [p.userId, p.topic, p.enabled])).toEqual([
          ['u1', 'billing', true],
          ['*', 'billing', false],
        ])
        expect(lookup('u2').map((p) => [p.userId, p.topic])).toEqual([
          ['u2', '*'],
          ['*', 'billing'],
        ])
        expect(lookup('u3').map((p) => p.userId)).toEqual(['*'])
        expect(lookup('u4').map((p) => p.userId)).toEqual(['*'])
      }
    })
  })

  describe('templates', () => {
    it('numbers versions per (topic, channel, locale), pages by id and lists the active ones', async () => {
      const d = b.directory
      const put = (topic: string, locale: string, active = true, channel = 'inbox') =>
        d.putTemplate({ topic, channel, locale, subject: `${topic}/${locale}`, body: 'b', format: 'markdown', active }, T0)
      const a1 = await put('a', 'en')
      expect(a1).toEqual({ id: a1.id, topic: 'a', channel: 'inbox', locale: 'en', version: 1, subject: 'a/en', body: 'b', format: 'markdown', active: true, createdAt: T0 })
      expect((await put('a', 'en')).version).toBe(2)
      expect((await put('a', 'de', false)).version).toBe(1)
      expect((await put('a', 'en', true, 'email')).version).toBe(1)
      expect((await put('b', 'en')).version).toBe(1)
      expect((await d.activeTemplates('a', 'inbox')).map((t) => [t.locale, t.version])).toEqual([
        ['en', 2],
        ['en', 1],
      ])
      const all = (await d.listTemplates()).map((t) => t.id)
      expect(all).toEqual([...all].sort((x, y) => y - x))
      expect(all).toHaveLength(5)
      const page = await d.listTemplates(undefined, { limit: 2 })
      expect((await d.listTemplates(undefined, { limit: 2, after: page[1]!.id })).map((t) => t.id)).toEqual(all.slice(2, 4))
      expect((await d.listTemplates('a', { limit: -1, after: all[1]! })).map((t) => t.topic)).toEqual(['a', 'a', 'a'])
    })
  })
})

describe.runIf(PG_URL)('directory on PostgreSQL, two nodes on one database', () => {
  let b: Awaited<ReturnType<typeof openPgBackend>>
  beforeAll(async () => {
    b = await openPgBackend()
  })
  afterAll(() => b.close())

  it('gives concurrent template writes distinct versions, and one creation of a user', async () => {
    const pools = [numberPool(b.url), numberPool(b.url)]
    try {
      const nodes = pools.map((p) => pgFamilies(p).directory)
      const tpl = { topic: 't', channel: 'inbox', locale: 'en', subject: '', body: '', format: 'text' as const, active: true }
      const made = await Promise.all(Array.from({ length: 12 }, (_, i) => nodes[i % 2]!.putTemplate(tpl, T0)))
      expect(made.map((t) => t.version).sort((x, y) => x - y)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1))
      const users = await Promise.all(Array.from({ length: 8 }, (_, i) => nodes[i % 2]!.putUser('same', { roles: [`r${i}`] }, T0 + i)))
      expect(users.filter((u) => u.created)).toHaveLength(1)
      const last = await nodes[0]!.getUser('same')
      // user_groups matches whichever write committed last.
      expect((await nodes[1]!.members('role', last!.roles[0]!)).map((m) => m.id)).toEqual(['same'])
      for (let i = 0; i < 8; i++) if (`r${i}` !== last!.roles[0]) expect(await nodes[1]!.members('role', `r${i}`)).toEqual([])
    } finally {
      await Promise.all(pools.map((p) => p.end()))
    }
  })
})

describe.runIf(PG_URL)('directory query plans on PostgreSQL', () => {
  let b: Awaited<ReturnType<typeof openPgBackend>>
  let pool: ReturnType<typeof numberPool>
  beforeAll(async () => {
    b = await openPgBackend()
    pool = numberPool(b.url, 1)
    // Some hundreds of rows with statistics: plans as a real directory gets them.
    await pool.query(`INSERT INTO templates (topic, channel, locale, version, created_at) SELECT 't' || (i % 20), 'inbox', 'en', i, 0 FROM generate_series(1, 2000) i`)
    await pool.query(`INSERT INTO subscriptions (topic, principal, created_at) SELECT 't' || (i % 20), 'user:' || i, i FROM generate_series(1, 2000) i`)
    await pool.query(`INSERT INTO users (id, created_at, updated_at) SELECT 'u' || i, i, i FROM generate_series(1, 2000) i`)
    await pool.query('ANALYZE')
    await pool.query('SET enable_seqscan = off')
  })
  afterAll(async () => {
    await pool.end()
    await b.close()
  })
  const plan = async (sql: string, values: unknown[]) =>
    (await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, values)).rows.map((r) => r['QUERY PLAN']).join('\n')

  it('reads subscription, template and user pages from their indexes in order, without a sort', async () => {
    const { PG_DIRECTORY_SQL: S } = await import('./directory.js')
    const { PG_USER_LIST_SQL } = await import('./user-list.js')
    const cases: [string, unknown[], RegExp][] = [
      [S.allSubscriptions, [T0, 't', 'p', 50], /subscriptions_created/],
      [S.subscriptionsOfTopic, [T0, 't', 'p', 50], /subscriptions_topic_created/],
      [S.templates, [10, 50], /templates_pkey/],
      [S.templatesByTopic, ['t', 10, 50], /templates_topic/],
      [PG_USER_LIST_SQL, [null, null, null, T0, 'u', 50], /users_created/],
    ]
    for (const [sql, values, index] of cases) {
      const p = await plan(sql, values)
      expect(p, sql).toMatch(index)
      expect(p, sql).not.toMatch(/Sort/)
    }
  })
})

describe.runIf(PG_URL)('DIRECTORY_DDL against schema.sql', () => {
  it('has the tables and columns SQLite has, column for column', async () => {
    const { openDatabase } = await import('../sqlite/db.js')
    const { tempDir } = await import('../../../test/helpers.js')
    const dir = tempDir()
    const pgb = await openPgBackend()
    const pool = numberPool(pgb.url, 1)
    try {
      const db = openDatabase(`${dir.dir}/postbox.db`)
      const tables = ['users', 'user_groups', 'subscriptions', 'preferences', 'templates', 'notifications', 'notification_suppressions',
        'notification_clicks', 'inbox_messages', 'inbox_counters', 'inbox_stream', 'inbox_counts']
      for (const t of tables) {
        const lite = (db.prepare(`SELECT name FROM pragma_table_info(?)`).all(t) as { name: string }[]).map((r) => r.name).sort()
        const pgCols = (await pool.query<{ name: string }>(`SELECT column_name AS name FROM information_schema.columns WHERE table_name = $1`, [t])).rows
          .map((r) => r.name)
          .sort()
        expect(pgCols, t).toEqual(lite)
      }
      db.close()
    } finally {
      await pool.end()
      await pgb.close()
      dir.cleanup()
    }
  })
})

describe.runIf(PG_URL)('directory property: any text sorts, pages and matches alike on both backends', () => {
  let lite: DirectoryBackend
  let pgb: DirectoryBackend
  beforeAll(async () => {
    ;[lite, pgb] = await Promise.all([openSqliteBackend(), openPgBackend()])
  })
  afterAll(() => Promise.all([lite.close(), pgb.close()]))

  // Any Unicode text but NUL, which PostgreSQL's text cannot hold (ids, roles and teams refuse
  // control characters at the API; a NUL in free text such as a name is refused by PostgreSQL only).
  const text = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 6 }).filter((t) => !t.includes('\u0000'))
  const rowArb = fc.record({ topic: fc.constantFrom('t', 'T', 'é'), who: text, at: fc.nat(3), enabled: fc.boolean(), name: fc.option(text) })

  it('lists subscriptions, subscribers, preferences and users in the same order, and finds the same users', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(rowArb, { maxLength: 25 }), text, async (rows, needle) => {
        const run = async (b: DirectoryBackend) => {
          await b.reset()
          const d = b.directory
          for (const r of rows) {
            await d.putSubscription(r.topic, `user:${r.who}`, T0 + r.at, r.enabled)
            await d.putPreference(pref(r.who, r.topic, r.enabled, r.name ?? '*', r.at))
            await d.putUser(r.who, { name: r.name, email: r.name === null ? null : `${r.name}@x`, roles: [r.topic] }, T0 + r.at)
          }
          const out: unknown[] = [await d.listSubscriptions(), await d.listSubscriptions('t', { limit: 3, after: { createdAt: T0 + 2, topic: 't', principal: 'user:m' } })]
          for (const t of ['t', 'T', 'é']) out.push(await d.subscribers(t), await d.members('role', t))
          for (const r of rows.slice(0, 3)) out.push(await d.preferencesFor(r.who, 't'), await d.preferencesOfUser(r.who), await d.userByEmail(`${(r.name ?? '').toUpperCase()}@X`))
          out.push(await b.userList.list({ role: null, team: null, q: needle }, { limit: -1 }))
          out.push(await b.userList.list({ role: 't', team: null, q: null }, { limit: 5, after: { createdAt: T0 + 1, id: 'm' } }))
          return out
        }
        expect(await run(pgb)).toEqual(await run(lite))
      }),
      { numRuns: 20 },
    )
  }, 120_000)
})
