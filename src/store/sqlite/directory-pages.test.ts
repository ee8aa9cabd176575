import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { encodeCursor, encodeOffsetCursor } from '../../lib/cursor.js'
import { DIRECTORY_SQL } from './directory.js'
import { subscriptionCursor, templateCursor, type SubscriptionKey, type SubscriptionRow } from '../directory.js'
import { tempSqliteStore } from '../../../test/helpers.js'

let t: ReturnType<typeof tempSqliteStore>
beforeEach(() => {
  t = tempSqliteStore()
})
afterEach(() => t.cleanup())

const T0 = Date.UTC(2026, 0, 1)
const TOPICS = ['deploy.done', 'build.failed', 'alert:high']

/** 90 subscriptions over three topics in shuffled order, two thirds of them in the same millisecond. */
function seed(): SubscriptionRow[] {
  const rows: SubscriptionRow[] = []
  for (let i = 0; i < 90; i++) {
    const n = (i * 37) % 90 // a fixed permutation, so insertion order is not key order
    const createdAt = n < 60 ? T0 + 5 : T0 + (n % 4)
    rows.push(t.store.directory.putSubscription(TOPICS[n % 3]!, `user:u${(n * 7) % 90}`, createdAt))
  }
  return rows
}

const byListOrder = (a: SubscriptionRow, b: SubscriptionRow): number =>
  b.createdAt - a.createdAt || (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0) || (a.principal < b.principal ? -1 : a.principal > b.principal ? 1 : 0)
const keyOf = (r: SubscriptionRow): string => `${r.topic} ${r.principal}`

/** Reads every page of `limit` rows, each starting after the previous page's last row. */
function walk(topic: string | undefined, limit: number): SubscriptionRow[][] {
  const pages: SubscriptionRow[][] = []
  let after: SubscriptionKey | null = null
  for (let i = 0; i < 100; i++) {
    const page = t.store.directory.listSubscriptions(topic, { limit, after })
    if (page.length === 0) return pages
    pages.push(page)
    after = page[page.length - 1]!
  }
  throw new Error('too many pages')
}

describe('subscription lists page by sort key', () => {
  it('walks the whole list once, newest first, ties in the same millisecond by topic then principal', () => {
    const rows = seed()
    const pages = walk(undefined, 7)
    expect(pages.slice(0, -1).every((p) => p.length === 7)).toBe(true)
    expect(pages.flat().map(keyOf)).toEqual([...rows].sort(byListOrder).map(keyOf))
    expect(new Set(pages.flat().map(keyOf)).size).toBe(90)
  })

  it("walks one topic's list once, newest first, ties by principal", () => {
    const rows = seed()
    for (const topic of TOPICS) {
      const expected = rows.filter((r) => r.topic === topic).sort(byListOrder)
      expect(expected.length).toBe(30)
      expect(walk(topic, 4).flat().map(keyOf), topic).toEqual(expected.map(keyOf))
    }
  })

  it('keeps its place when rows are added or the last row is deleted between pages', () => {
    seed()
    const d = t.store.directory
    const first = d.listSubscriptions(undefined, { limit: 10 })
    const after = first[first.length - 1]!
    // A new newest row would shift an offset by one and repeat a row on the next page.
    d.putSubscription('build.failed', 'user:newest', T0 + 100)
    const rest = d.listSubscriptions(undefined, { limit: -1, after }).map(keyOf)
    expect(rest).toHaveLength(80)
    expect(new Set([...first.map(keyOf), ...rest]).size).toBe(90)
    d.deleteSubscription(after.topic, after.principal)
    expect(d.listSubscriptions(undefined, { limit: -1, after }).map(keyOf)).toEqual(rest)
  })

  it('pages templates by id, newest first, filtered by topic or not', () => {
    const d = t.store.directory
    const ids: Record<string, number[]> = { a: [], b: [] }
    for (let i = 0; i < 12; i++) {
      const topic = i % 3 === 0 ? 'a' : 'b'
      ids[topic]!.push(d.putTemplate({ topic, channel: 'inbox', locale: 'en', subject: `s${i}`, body: '', format: 'text', active: true }, T0).id)
    }
    const walkIds = (topic?: string): number[] => {
      const out: number[] = []
      for (let i = 0, after: number | null = null; i < 20; i++) {
        const page = d.listTemplates(topic, { limit: 5, after })
        if (page.length === 0) return out
        out.push(...page.map((r) => r.id))
        after = page[page.length - 1]!.id
      }
      throw new Error('too many pages')
    }
    expect(walkIds()).toEqual([...ids.a!, ...ids.b!].sort((x, y) => y - x))
    expect(walkIds('a')).toEqual([...ids.a!].reverse())
    expect(walkIds('b')).toEqual([...ids.b!].reverse())
  })
})

describe('directory list cursors', () => {
  it('round-trip a sort key, a principal with a slash or non-ASCII characters included', () => {
    for (const key of [
      { createdAt: T0, topic: 'build.failed', principal: 'user:a/b/c' },
      { createdAt: 0, topic: 'x', principal: 'user:Zoë-名前' },
      { createdAt: T0, topic: 't'.repeat(200), principal: `user:${'é'.repeat(200)}` },
    ]) {
      expect(subscriptionCursor.decode(subscriptionCursor.encode(key))).toEqual(key)
    }
    expect(templateCursor.decode(templateCursor.encode({ id: 42 }))).toBe(42)
  })

  it("refuse another list's cursor and malformed ones", () => {
    const foreign = [
      templateCursor.encode({ id: 42 }),
      encodeOffsetCursor(50),
      encodeCursor('evt_01jabcdefghjkmnpqrstvwxyz0'),
      encodeCursor('sub/12x/t/user:a'),
      encodeCursor('sub/12/t'),
      encodeCursor('tpl/12/t/user:a'),
      'not a cursor!',
    ]
    for (const c of foreign) expect(subscriptionCursor.decode(c), c).toBeNull()
    for (const c of [subscriptionCursor.encode({ createdAt: 1, topic: 't', principal: 'p' }), encodeCursor('tpl/x'), encodeCursor('sub/12'), encodeCursor('123')]) {
      expect(templateCursor.decode(c), c).toBeNull()
    }
  })
})

describe('directory list query plans', () => {
  const plan = (sql: string): string => {
    const params = { createdAt: T0, topic: 't', principal: 'user:a', limit: 50 }
    const stmt = t.store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`)
    const rows = sql.includes('@') ? stmt.all(params) : stmt.all(...Array.from(sql.matchAll(/\?/g), (_m, i) => (i === 0 && sql.includes('topic = ?') ? 't' : 1)))
    return (rows as { detail: string }[]).map((r) => r.detail).join(' | ')
  }

  it('read a subscription page from its index: two ranges merged in order, no scan and no sort', () => {
    const all = plan(DIRECTORY_SQL.allSubscriptions)
    expect(all).toMatch(/^MERGE \(UNION ALL\) \| LEFT \| SEARCH subscriptions USING INDEX subscriptions_created \(created_at=\? AND \(topic,principal\)>\(\?,\?\)\) \| RIGHT \| SEARCH subscriptions USING INDEX subscriptions_created \(created_at<\?\)$/)
    const ofTopic = plan(DIRECTORY_SQL.subscriptionsOfTopic)
    expect(ofTopic).toMatch(/SEARCH subscriptions USING INDEX subscriptions_topic_created \(topic=\? AND created_at=\? AND principal>\?\)/)
    expect(ofTopic).toMatch(/SEARCH subscriptions USING INDEX subscriptions_topic_created \(topic=\? AND created_at<\?\)/)
    for (const p of [all, ofTopic]) expect(p).not.toMatch(/TEMP B-TREE|SCAN/)
  })

  it('read a template page from the rowid or the topic index, no scan and no sort', () => {
    expect(plan(DIRECTORY_SQL.templates)).toBe('SEARCH templates USING INTEGER PRIMARY KEY (rowid<?)')
    expect(plan(DIRECTORY_SQL.templatesByTopic)).toBe('SEARCH templates USING INDEX templates_topic (topic=? AND rowid<?)')
  })
})
