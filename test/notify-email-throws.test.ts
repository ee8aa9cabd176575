/**
 * Finding 7 of issue #36 (first item): an email whose sender threw was retried 6 times in 6 s
 * (the dispatcher's fixed one-second fallback). The email channel now turns a throw into a failed
 * attempt on the retry schedule. Both backends (notify-*.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { silentLogger } from '../src/log.js'
import { createEmailChannel } from '../src/notify/channels/email.js'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'

let h: NotifyHarness | undefined
afterEach(async () => {
  await h?.cleanup()
  h = undefined
})

describe('an email whose sending throws', () => {
  it('retries on the retry schedule (error internal), and is dead once the schedule is spent', async () => {
    h = await notifyHarness({ smtpUrl: 'smtp://127.0.0.1:9' })
    await h.notify.users.put('u1', { email: 'ann@example.com' })
    await h.notify.notifications.send({ topic: 't', recipients: ['u1'], channels: ['email'] })
    const schedule = [60_000, 600_000]
    const channel = createEmailChannel({
      store: h.store, clock: h.clock, rng: () => 0.5, log: silentLogger(), schedule, smtpUrl: 'smtp://127.0.0.1:9', from: 'postbox@example.com',
      trackedLink: () => {
        throw new Error('click tracking broke')
      },
    })
    const signal = new AbortController().signal
    const [first] = await h.store.deliveries.claimDue({ limit: 10, now: h.clock.now(), defaultTimeoutMs: 30_000 })
    const r1 = await channel.send(first!, signal)
    // rng 0.5 is a jitter factor of exactly 1.
    expect(r1).toMatchObject({ outcome: { kind: 'retry', at: h.clock.now() + 60_000 }, attempt: { error: 'internal' } })
    const spent = { ...first!, attempts: schedule.length + 1 }
    expect((await channel.send(spent, signal)).outcome).toEqual({ kind: 'dead' })
    channel.close()
  })
})
