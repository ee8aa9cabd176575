import { afterEach, describe, expect, it } from 'vitest'
import { SMTPServer } from 'smtp-server'
import type { AddressInfo } from 'node:net'
import { systemClock } from '../src/lib/clock.js'
import { silentLogger } from '../src/log.js'
import { createEmailChannel, type EmailChannel } from '../src/notify/channels/email.js'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'

/** An SMTP sink that holds each message's DATA reply for `delayMs`; records what it accepted. */
async function slowSink(delayMs: number): Promise<{ url: string; accepted: string[]; close(): Promise<void> }> {
  const accepted: string[] = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, cb) {
      stream.resume()
      stream.on('end', () =>
        setTimeout(() => {
          accepted.push(session.envelope.rcptTo.map((r) => r.address).join(','))
          cb()
        }, delayMs),
      )
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`,
    accepted,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

let h: NotifyHarness
let channel: EmailChannel | null = null
let sink: Awaited<ReturnType<typeof slowSink>> | null = null
afterEach(async () => {
  channel?.close()
  channel = null
  await sink?.close()
  sink = null
  await h?.cleanup()
})

/** The email channel over `smtpUrl` on the harness's store, with test limits. */
const emailChannel = (smtpUrl: string, limits?: Parameters<typeof createEmailChannel>[0]['limits']): EmailChannel =>
  createEmailChannel({ store: h.store, clock: systemClock, rng: () => 0.5, log: silentLogger(), schedule: [1000], smtpUrl, from: 'p@postbox.test', ...(limits ? { limits } : {}) })

/** Queues one email notification per address and claims them all. */
async function claimEmails(addresses: string[]) {
  for (const [i, email] of addresses.entries()) await h.notify.users.put(`u${i}`, { email })
  await h.notify.notifications.send({ topic: 't', recipients: addresses.map((_, i) => `u${i}`), channels: ['email'], title: 'Hi' })
  return await h.store.deliveries.claimDue({ limit: 100, now: Date.now(), defaultTimeoutMs: 60_000 })
}

describe('email channel limits (the lease must outlive every send)', () => {
  it('a message that cannot get a connection in time is snoozed unsent, with nothing sent twice', async () => {
    sink = await slowSink(400)
    h = await notifyHarness({ smtpUrl: sink.url })
    channel = emailChannel(sink.url, { connections: 1, queueWaitMs: 100 })
    const claimed = await claimEmails(['a@example.com', 'b@example.com'])
    expect(claimed).toHaveLength(2)
    const signal = new AbortController().signal
    const results = await Promise.all(claimed.map((d) => channel!.send(d, signal)))
    expect(results.map((r) => r.outcome.kind)).toEqual(['success', 'snooze'])
    expect(results[1]!.attempt).toBeUndefined()
    expect(sink.accepted).toEqual(['a@example.com'])
    // Once snoozed nothing reaches the server later either.
    await new Promise((r) => setTimeout(r, 600))
    expect(sink.accepted).toEqual(['a@example.com'])
  })

  it('an exchange past its time limit ends as a retry, and the channel sends again afterwards', async () => {
    sink = await slowSink(1500)
    h = await notifyHarness({ smtpUrl: sink.url })
    channel = emailChannel(sink.url, { connections: 1, exchangeMs: 300 })
    const [d] = await claimEmails(['slow@example.com'])
    const signal = new AbortController().signal
    const r = await channel.send(d!, signal)
    expect(r.outcome.kind).toBe('retry')
    expect(r.attempt?.error).toBe('timeout') // the webhook channel's code for the same failure
    await sink.close()
    sink = await slowSink(0)
    const fast = emailChannel(sink.url)
    try {
      expect((await fast.send(d!, signal)).outcome.kind).toBe('success')
      expect(sink.accepted).toEqual(['slow@example.com'])
    } finally {
      fast.close()
    }
  })
})
