import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../src/lib/clock.js'
import { encodeCursor, encodeOffsetCursor } from '../src/lib/cursor.js'
import { allPages, apiFixture, type ApiFixture } from './support/api.js'

let f: ApiFixture
afterEach(async () => {
  await f?.close()
})

interface Sub {
  topic: string
  principal: string
  created_at: string
}


/** 40 subscriptions over two topics: 30 in one millisecond, put in an order unlike the list's. */
async function seed(clock: ManualClock): Promise<void> {
  for (let i = 0; i < 40; i++) {
    if (i === 30) clock.advance(7)
    const n = (i * 13) % 40
    const body = { topic: n % 2 ? 'build.failed' : 'alert:high', principal: n % 5 ? `user:u${n}` : `team:t${n}` }
    expect((await f.call('PUT', '/v1/subscriptions', { body })).status).toBe(200)
  }
}

const key = (s: Sub): string => `${s.topic} ${s.principal}`
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
const listOrder = (a: Sub, b: Sub): number => cmp(b.created_at, a.created_at) || cmp(a.topic, b.topic) || cmp(a.principal, b.principal)

describe('GET /v1/subscriptions pages by sort key', () => {
  it('returns every subscription exactly once, newest first, ties in one millisecond by topic then principal', async () => {
    const clock = new ManualClock()
    f = await apiFixture({ clock })
    await seed(clock)
    const whole = (await f.json('GET', '/v1/subscriptions?limit=200')).body.data as Sub[]
    expect(whole).toHaveLength(40)
    const pages = await allPages<Sub>(f, '/v1/subscriptions', 6)
    expect(pages.map((p) => p.length)).toEqual([6, 6, 6, 6, 6, 6, 4])
    expect(pages.flat().map(key)).toEqual([...whole].sort(listOrder).map(key))
    expect(new Set(pages.flat().map(key)).size).toBe(40)
  })

  it("returns one topic's subscriptions exactly once, newest first, ties by principal", async () => {
    const clock = new ManualClock()
    f = await apiFixture({ clock })
    await seed(clock)
    const whole = (await f.json('GET', '/v1/subscriptions?limit=200')).body.data as Sub[]
    for (const topic of ['build.failed', 'alert:high']) {
      const pages = await allPages<Sub>(f, `/v1/subscriptions?topic=${topic}`, 3)
      expect(pages.flat().map(key), topic).toEqual(whole.filter((s) => s.topic === topic).sort(listOrder).map(key))
    }
  })

  it('refuses a malformed cursor, an offset cursor, another list\'s cursor and another topic\'s with 400 validation_failed', async () => {
    const clock = new ManualClock()
    f = await apiFixture({ clock })
    await seed(clock)
    for (let i = 0; i < 3; i++) await f.call('PUT', '/v1/templates', { body: { topic: 't', channel: 'inbox', subject: `v${i}` } })
    const template = (await f.json('GET', '/v1/templates?limit=1')).body.next_cursor as string
    const ofTopic = (await f.json('GET', '/v1/subscriptions?topic=build.failed&limit=1')).body.next_cursor as string
    expect([template, ofTopic]).toEqual([expect.any(String), expect.any(String)])
    // The same cursor continues its own list, and the whole list.
    expect((await f.json('GET', `/v1/subscriptions?topic=build.failed&cursor=${ofTopic}`)).status).toBe(200)
    expect((await f.json('GET', `/v1/subscriptions?cursor=${ofTopic}`)).status).toBe(200)
    const bad = [
      '!!',
      encodeOffsetCursor(2),
      encodeCursor('sub/x/build.failed/user:a'),
      encodeCursor(`sub/1/${'a'.repeat(2000)}`),
      template,
    ]
    for (const cursor of bad) {
      const r = await f.json('GET', `/v1/subscriptions?cursor=${cursor}`)
      expect([cursor, r.status, r.body.error?.code]).toEqual([cursor, 400, 'validation_failed'])
    }
    const other = await f.json('GET', `/v1/subscriptions?topic=alert:high&cursor=${ofTopic}`)
    expect([other.status, other.body.error?.code]).toEqual([400, 'validation_failed'])
    const sub = await f.json('GET', `/v1/templates?cursor=${ofTopic}`)
    expect([sub.status, sub.body.error?.code]).toEqual([400, 'validation_failed'])
  })

  it('pages templates by id through the same kind of cursor', async () => {
    f = await apiFixture({ clock: new ManualClock() })
    for (let i = 0; i < 7; i++) {
      const topic = i % 2 ? 'odd' : 'even'
      expect((await f.call('PUT', '/v1/templates', { body: { topic, channel: 'inbox', subject: `v${i}` } })).status).toBe(201)
    }
    const versions = (pages: { topic: string; version: number }[][]) => pages.map((p) => p.map((t) => `${t.topic}${t.version}`))
    expect(versions(await allPages(f, '/v1/templates', 3))).toEqual([['even4', 'odd3', 'even3'], ['odd2', 'even2', 'odd1'], ['even1']])
    expect(versions(await allPages(f, '/v1/templates?topic=even', 3))).toEqual([['even4', 'even3', 'even2'], ['even1']])
  })
})
