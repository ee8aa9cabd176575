import { afterEach, describe, expect, it } from 'vitest'
import type { StreamEvent } from '../src/store/inbox.js'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'

/**
 * Finding 3 of issue #36: an app-limited user token's stream (live and replayed) carried the
 * `state` events of other applications' messages. Runs on both backends (notify-*.test.ts).
 */
let h: NotifyHarness
afterEach(() => h?.cleanup())

/** Ann gets one message of a1 and one of a2; returns their ids. */
async function twoApps() {
  h = await notifyHarness()
  await h.notify.notifications.send({ topic: 'chat', recipients: ['ann'], title: 'one', app_id: 'a1', tags: ['t1'] })
  await h.notify.notifications.send({ topic: 'chat', recipients: ['ann'], title: 'two', app_id: 'a2', tags: ['t2'] })
  await h.drain()
  const all = await h.notify.inbox('ann').list({})
  const idOf = (app: string) => all.data.find((m) => m.app_id === app)!.id
  return { m1: idOf('a1'), m2: idOf('a2') }
}

/** Every change an unlimited token (or another application's token) may make. */
async function changeBoth(m1: string, m2: string) {
  const all = h.notify.inbox('ann')
  await all.readAll({ app_id: 'a2', tags: ['t2'] })
  await all.unread([m2])
  await all.read([m1, m2])
  await all.archive([m2])
  await all.unarchive([m2])
  await h.notify.inbox('ann', 'a2').snooze([m2], h.clock.now() + 60_000)
  await all.archiveAll({})
}

/** What a1's token may see of the state events: only a1's ids, no other application's filter. */
function expectScoped(events: StreamEvent[], m1: string) {
  const states = events.filter((e) => e.kind === 'state').map((e) => e.data)
  expect(JSON.stringify(states)).not.toContain('a2')
  expect(states).toEqual([
    { change: 'read', ids: [m1] },
    { change: 'archive_all', filter: { topic: null, tags: null, app_id: 'a1', read: null } },
  ])
}

describe('an app-limited token sees only its application’s state changes', () => {
  it('on replay (Last-Event-ID)', async () => {
    const { m1, m2 } = await twoApps()
    const from = await h.notify.inbox('ann', 'a1').lastSeq()
    await changeBoth(m1, m2)
    expectScoped(await h.notify.inbox('ann', 'a1').replay(from), m1)
    // The unlimited token still sees every change, as it was.
    const full = (await h.notify.inbox('ann').replay(from)).filter((e) => e.kind === 'state')
    expect(full).toHaveLength(7)
    expect(full[2]!.data).toEqual({ change: 'read', ids: [m1, m2] })
  })

  it('live', async () => {
    const { m1, m2 } = await twoApps()
    const live: StreamEvent[] = []
    const stop = h.notify.stream.subscribe('ann', (e) => void live.push(e))
    await changeBoth(m1, m2)
    stop()
    const scoped = h.notify.inbox('ann', 'a1')
    const seen: StreamEvent[] = []
    for (const e of live) {
      const s = await scoped.scope(e)
      if (s) seen.push(s)
    }
    expectScoped(seen, m1)
  })
})
