import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { SMTPServer } from 'smtp-server'
import type { AddressInfo } from 'node:net'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'
import { runSql } from './support/backend.js'
import { until } from './support/webhooks-harness.js'

interface Mail {
  from: string
  to: string[]
  subject: string
  text: string
  raw: string
}

/** Decodes the quoted-printable and base64 parts nodemailer may use, enough to read a body. */
function decodeBody(raw: string): string {
  const [head, ...rest] = raw.split(/\r?\n\r?\n/)
  const body = rest.join('\n\n')
  if (/content-transfer-encoding:\s*base64/i.test(head!)) return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8')
  if (/content-transfer-encoding:\s*quoted-printable/i.test(head!)) {
    const soft = body.replace(/=\r?\n/g, '')
    const bytes: number[] = []
    for (let i = 0; i < soft.length; i++) {
      if (soft[i] === '=' && /^[0-9A-F]{2}$/i.test(soft.slice(i + 1, i + 3))) {
        bytes.push(parseInt(soft.slice(i + 1, i + 3), 16))
        i += 2
      } else bytes.push(...Buffer.from(soft[i]!, 'utf8'))
    }
    return Buffer.from(bytes).toString('utf8')
  }
  return body
}

/** The decoded body of the MIME part with `contentType` in a multipart message, or null. */
function mimePart(raw: string, contentType: string): string | null {
  const boundary = /boundary="?([^";\r\n]+)"?/i.exec(raw)?.[1]
  if (!boundary) return null
  const part = raw.split(`--${boundary}`).find((p) => new RegExp(`content-type:\\s*${contentType}`, 'i').test(p))
  return part === undefined ? null : decodeBody(part.replace(/^\r?\n/, '')).replace(/\r\n/g, '\n').trim()
}

function decodeSubject(raw: string): string {
  const line = /^subject:(.*(?:\r?\n[ \t].*)*)/im.exec(raw)?.[1] ?? ''
  return line
    .replace(/\r?\n[ \t]/g, ' ')
    .replace(/=\?utf-8\?([bq])\?([^?]*)\?=/gi, (_m, enc: string, text: string) =>
      enc.toLowerCase() === 'b' ? Buffer.from(text, 'base64').toString('utf8') : decodeBody(`content-transfer-encoding: quoted-printable\n\n${text.replace(/_/g, ' ')}`),
    )
    .replace(/\?=\s+=\?/g, '')
    .trim()
}

const mails: Mail[] = []
let server: SMTPServer
let smtpUrl: string

beforeAll(async () => {
  server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(address, _session, cb) {
      if (address.address.startsWith('perm')) return cb(Object.assign(new Error('550 mailbox unavailable'), { responseCode: 550 }))
      if (address.address.startsWith('temp')) return cb(Object.assign(new Error('451 try again later'), { responseCode: 451 }))
      cb()
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8')
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          subject: decodeSubject(raw),
          text: decodeBody(raw).replace(/\r\n/g, "\n").trim(),
          raw,
        })
        cb()
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  smtpUrl = `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

let h: NotifyHarness
afterEach(async () => {
  await h?.cleanup()
  mails.length = 0
})

const statusOf = async (h: NotifyHarness, id: string) =>
  (await h.store.deliveries.byNotification(id)).map((d) => ({ status: d.status, attempts: d.attempts, error: d.lastError, next: d.nextAttemptAt }))

describe('email channel over a real SMTP sink', () => {
  it('sends one message from the configured address', async () => {
    h = await notifyHarness({ smtpUrl, emailFrom: 'bell@postbox.test' })
    await h.notify.users.put('u1', { email: 'ann@example.com' })
    const r = await h.notify.notifications.send({ topic: 'welcome', recipients: ['u1'], channels: ['email'], title: 'Hello Ann', body: 'Welcome aboard' })
    await h.drain()
    expect(mails).toEqual([{ from: 'bell@postbox.test', to: ['ann@example.com'], subject: 'Hello Ann', text: 'Welcome aboard', raw: expect.any(String) }])
    expect(mails[0]!.raw).not.toMatch(/text\/html/i)
    expect(await statusOf(h, r.id)).toMatchObject([{ status: 'success', attempts: 1 }])
  })

  it('sends a markdown template as its text plus an HTML part, with HTML from the payload shown as text', async () => {
    h = await notifyHarness({ smtpUrl })
    await h.notify.users.put('u1', { email: 'ann@example.com' })
    await h.notify.templates.put({
      topic: 'digest.ready',
      channel: 'email',
      locale: 'en',
      subject: 'Report',
      body: '**{{ payload.name }}**, your [report](https://example.com/r/1) is ready.',
      format: 'markdown',
    })
    await h.notify.notifications.send({ topic: 'digest.ready', recipients: ['u1'], channels: ['email'], payload: { name: 'Ann <b>x</b>' } })
    await h.drain()
    expect(mails).toHaveLength(1)
    expect(mimePart(mails[0]!.raw, 'text/plain')).toBe('**Ann <b>x</b>**, your [report](https://example.com/r/1) is ready.')
    expect(mimePart(mails[0]!.raw, 'text/html')).toBe(
      '<p><strong>Ann &lt;b&gt;x&lt;/b&gt;</strong>, your <a href="https://example.com/r/1">report</a> is ready.</p>',
    )
  })

  it('sends an HTML template with a text part made of its words, not its markup', async () => {
    h = await notifyHarness({ smtpUrl })
    await h.notify.users.put('u1', { email: 'ann@example.com' })
    await h.notify.templates.put({
      topic: 'order.shipped',
      channel: 'email',
      locale: 'en',
      subject: 'Shipped',
      body: '<p>Hello {{ payload.name }},</p><p>order <b>#42</b> is on its way: <a href="https://example.com/t/42">track it</a>.</p>',
      format: 'html',
    })
    await h.notify.notifications.send({ topic: 'order.shipped', recipients: ['u1'], channels: ['email'], payload: { name: 'Ann <script>' } })
    await h.drain()
    expect(mails).toHaveLength(1)
    expect(mimePart(mails[0]!.raw, 'text/plain')).toBe('Hello Ann <script>,\n\norder #42 is on its way: track it (https://example.com/t/42).')
    expect(mimePart(mails[0]!.raw, 'text/html')).toContain('Hello Ann &lt;script&gt;,')
  })

  it('marks a 5xx reply dead at once', async () => {
    h = await notifyHarness({ smtpUrl })
    const r = await h.notify.notifications.send({ topic: 't', recipients: ['perm@example.com'], channels: ['email'] })
    await h.drain()
    expect(await statusOf(h, r.id)).toMatchObject([{ status: 'dead', attempts: 1, error: expect.stringContaining('550') }])
    expect(await h.store.deliveries.attempts((await h.store.deliveries.byNotification(r.id))[0]!.id)).toMatchObject([{ statusCode: 550, outcome: 'dead' }])
  })

  it('retries a 4xx reply on the notification schedule until it is spent', async () => {
    h = await notifyHarness({ smtpUrl })
    const r = await h.notify.notifications.send({ topic: 't', recipients: ['temp@example.com'], channels: ['email'] })
    const start = h.clock.now()
    await h.drain()
    // rng = 0.5 → jitter factor 1.0: the first delay is exactly 1 s.
    expect(await statusOf(h, r.id)).toMatchObject([{ status: 'pending', attempts: 1, next: start + 1000, error: expect.stringContaining('451') }])
    for (const delay of [1000, 10_000, 60_000, 600_000, 3_600_000]) {
      h.clock.advance(delay)
      await h.drain()
    }
    expect(await statusOf(h, r.id)).toMatchObject([{ status: 'dead', attempts: 6 }])
  })

  it('retries a transport error (nothing listening)', async () => {
    h = await notifyHarness({ smtpUrl: 'smtp://127.0.0.1:1' })
    await h.notify.users.put('u1', { email: 'ann@example.com' })
    const r = await h.notify.notifications.send({ topic: 't', recipients: ['u1'], channels: ['email'] })
    await h.drain()
    expect(await statusOf(h, r.id)).toMatchObject([{ status: 'pending', attempts: 1 }])
  })

  it('sends a digest group as ONE message at the window end', async () => {
    h = await notifyHarness({ smtpUrl })
    await h.notify.users.put('u1', { email: 'ann@example.com', timezone: 'UTC' })
    await h.notify.preferences.put({ user_id: 'u1', topic: '*', channel: 'email', digest: 'daily' })
    const ids: string[] = []
    for (const title of ['First', 'Second', 'Third']) ids.push((await h.notify.notifications.send({ topic: 'c', recipients: ['u1'], channels: ['email'], title })).id)
    await h.drain()
    expect(mails).toEqual([])
    h.clock.set(Date.parse('2026-01-16T00:00:00Z'))
    await h.drain()
    expect(mails).toHaveLength(1)
    expect(mails[0]).toMatchObject({ to: ['ann@example.com'], subject: 'You have 3 notifications', text: '• First\n• Second\n• Third' })
    expect((await Promise.all(ids.map((id) => statusOf(h, id)))).flat().map((s) => s.status)).toEqual(['success', 'success', 'success'])
  })

  it('holds the pending members of a digest while it is sent, so a claim meanwhile cannot send them twice', async () => {
    h = await notifyHarness({ smtpUrl })
    await h.notify.users.put('u1', { email: 'ann@example.com' })
    await h.notify.preferences.put({ user_id: 'u1', topic: '*', channel: 'email', digest: 'daily' })
    const ids: string[] = []
    for (const title of ['A', 'B', 'C']) ids.push((await h.notify.notifications.send({ topic: 'c', recipients: ['u1'], channels: ['email'], title })).id)
    h.clock.set(Date.parse('2026-01-16T00:00:00Z'))
    const claim = () => h.store.deliveries.claimDue({ limit: 1, now: h.clock.now(), defaultTimeoutMs: 30_000 })
    const [one] = await claim()
    const sending = h.notify.channels.email.send(one!, new AbortController().signal)
    // The digest reads its group and holds the other members before it talks SMTP (on
    // PostgreSQL that is a round trip, longer than a turn of the event loop).
    const others = async () => (await Promise.all(ids.map((id) => h.store.deliveries.byNotification(id)))).flat().filter((d) => d.id !== one!.id)
    await until(async () => (await others()).every((d) => d.nextAttemptAt > h.clock.now()) || undefined)
    expect(await claim()).toEqual([])
    const res = await sending
    await h.store.deliveries.settle([{ id: one!.id, claimToken: one!.claimToken, outcome: res.outcome, attempt: res.attempt }], h.clock.now())
    await h.drain()
    expect(mails).toEqual([expect.objectContaining({ subject: 'You have 3 notifications', text: '• A\n• B\n• C' })])
    expect((await Promise.all(ids.map((id) => statusOf(h, id)))).flat().map((s) => s.status)).toEqual(['success', 'success', 'success'])
  })

  it('a digest that must retry keeps its group together: held members become due with the retry', async () => {
    h = await notifyHarness({ smtpUrl })
    await h.notify.preferences.put({ user_id: '*', topic: '*', channel: 'email', digest: 'daily' })
    for (const title of ['A', 'B']) await h.notify.notifications.send({ topic: 'c', recipients: ['temp@example.com'], channels: ['email'], title })
    h.clock.set(Date.parse('2026-01-16T00:00:00Z'))
    const start = h.clock.now()
    const [one] = await h.store.deliveries.claimDue({ limit: 1, now: start, defaultTimeoutMs: 30_000 })
    const res = await h.notify.channels.email.send(one!, new AbortController().signal)
    expect(res.outcome).toEqual({ kind: 'retry', at: start + 1000 })
    await h.store.deliveries.settle([{ id: one!.id, claimToken: one!.claimToken, outcome: res.outcome, attempt: res.attempt }], start)
    const rows = await h.store.deliveries.pendingInGroup(one!.groupKey!, start + 1000)
    expect(rows.map((d) => d.nextAttemptAt)).toEqual([start + 1000, start + 1000])
  })

  it('a digest whose message fails transiently on its carrier\'s last attempt ends only the carrier: the others keep their attempts', async () => {
    h = await notifyHarness({ smtpUrl })
    await h.notify.preferences.put({ user_id: '*', topic: '*', channel: 'email', digest: 'daily' })
    const ids: string[] = []
    for (const title of ['A', 'B', 'C']) ids.push((await h.notify.notifications.send({ topic: 'c', recipients: ['temp@example.com'], channels: ['email'], title })).id)
    const [a, b, c] = (await Promise.all(ids.map((id) => h.store.deliveries.byNotification(id)))).map((rows) => rows[0]!)
    // A has failed five times before (of six): this claim is its last attempt.
    await runSql(h.store, `UPDATE deliveries SET attempts = 5 WHERE id = ?`, [a!.id])
    h.clock.set(Date.parse('2026-01-16T00:00:00Z'))
    const start = h.clock.now()
    // A carries the message, B is claimed with it, C is carried from the store; the server says 451.
    const claimed = await h.store.deliveries.claimDue({ limit: 2, now: start, defaultTimeoutMs: 30_000 })
    expect(claimed.map((d) => [d.id, d.attempts])).toEqual([[a!.id, 6], [b!.id, 1]])
    const signal = new AbortController().signal
    const results = await Promise.all(claimed.map((d) => h.notify.channels.email.send(d, signal)))
    await h.store.deliveries.settle(claimed.map((d, i) => ({ id: d.id, claimToken: d.claimToken, outcome: results[i]!.outcome, attempt: results[i]!.attempt })), start)
    expect(results.map((r) => r.outcome.kind)).toEqual(['dead', 'retry'])
    // B and C retry together at the next step of their own schedule (the first: 1 s).
    expect((await Promise.all(ids.map((id) => statusOf(h, id)))).flat()).toEqual([
      { status: 'dead', attempts: 6, error: expect.stringContaining('451'), next: expect.any(Number) },
      { status: 'pending', attempts: 1, error: expect.stringContaining('451'), next: start + 1000 },
      { status: 'pending', attempts: 1, error: expect.stringContaining('451'), next: start + 1000 },
    ])
    expect(await h.store.deliveries.attempts(c!.id)).toEqual([expect.objectContaining({ attempt: 1, outcome: 'retry', statusCode: 451 })])
  })

  it('each member a digest message carries gets its attempt, naming the delivery that carried it', async () => {
    const counted: [string, string][] = []
    h = await notifyHarness({ smtpUrl }, { observer: { attempt: (channel, outcome) => void counted.push([channel, outcome]) } })
    await h.notify.preferences.put({ user_id: '*', topic: '*', channel: 'email', digest: 'daily' })
    const to = ['ok@example.com', 'perm@example.com', 'temp@example.com']
    for (const title of ['A', 'B', 'C']) await h.notify.notifications.send({ topic: 'c', recipients: to, channels: ['email'], title })
    h.clock.set(Date.parse('2026-01-16T00:00:00Z'))
    const now = h.clock.now()
    const signal = new AbortController().signal
    // One member of each group claimed alone: the other two go out in its message.
    const carriers = await h.store.deliveries.claimDue({ limit: 3, now, defaultTimeoutMs: 30_000 })
    expect(new Set(carriers.map((d) => d.groupKey)).size).toBe(3)
    for (const d of carriers) {
      const res = await h.notify.channels.email.send(d, signal)
      await h.store.deliveries.settle([{ id: d.id, claimToken: d.claimToken, outcome: res.outcome, attempt: res.attempt }], now)
    }
    const rows = (await h.store.deliveries.list({ limit: 100 })).data
    expect(rows).toHaveLength(9)
    const carrierIds = new Set(carriers.map((d) => d.id))
    const carriedBy = new Map(carriers.map((d) => [d.groupKey, d.id]))
    for (const row of rows.filter((r) => !carrierIds.has(r.id))) {
      const carrier = carriedBy.get(row.groupKey)!
      const who = row.groupKey!.split('|')[0]
      const expected = { ok: ['success', 'success'], perm: ['dead', 'dead'], temp: ['pending', 'retry'] }[who!.split('@')[0] as 'ok' | 'perm' | 'temp']
      expect([who, row.status, row.attempts]).toEqual([who, expected[0], 1])
      expect(await h.store.deliveries.attempts(row.id)).toEqual([
        expect.objectContaining({ attempt: 1, outcome: expected[1], responseBody: expect.stringContaining(`sent in the message of ${carrier}`) }),
      ])
      const attempt = (await h.store.deliveries.attempts(row.id))[0]!
      const own = (await h.store.deliveries.attempts(carrier))[0]!
      expect([attempt.startedAt, attempt.durationMs, attempt.statusCode, attempt.error]).toEqual([own.startedAt, own.durationMs, own.statusCode, own.error])
      if (who === 'temp@example.com') expect(row.nextAttemptAt).toBe((await h.store.deliveries.get(carrier))!.nextAttemptAt)
    }
    // The carried members' attempts are counted like the claimed ones' (here by the channel, two per group).
    expect(counted.sort()).toEqual([...Array(2).fill(['email', 'dead']), ...Array(2).fill(['email', 'retry']), ...Array(2).fill(['email', 'success'])].sort())
  })

  it('a digest leaves out members still inside their quiet hours (critical ones skip quiet hours, not the digest)', async () => {
    h = await notifyHarness({ smtpUrl })
    await h.notify.users.put('u1', { email: 'ann@example.com' })
    await h.notify.preferences.put({ user_id: 'u1', topic: '*', channel: '*', digest: 'daily', quiet_hours: { tz: 'UTC', start: '22:00', end: '07:00' } })
    h.clock.set(Date.parse('2026-01-15T23:00:00Z'))
    await h.notify.notifications.send({ topic: 'c', recipients: ['u1'], channels: ['email'], title: 'Quiet one' })
    await h.notify.notifications.send({ topic: 'c', recipients: ['u1'], channels: ['email'], title: 'Urgent one', severity: 'critical' })
    const due = (await h.store.deliveries.list({ limit: 10 })).data.map((d) => new Date(d.nextAttemptAt).toISOString()).sort()
    expect(due).toEqual(['2026-01-16T00:00:00.000Z', '2026-01-16T07:00:00.000Z'])
    h.clock.set(Date.parse('2026-01-16T00:00:00Z'))
    await h.drain()
    expect(mails.map((m) => m.subject)).toEqual(['Urgent one'])
    h.clock.set(Date.parse('2026-01-16T07:00:00Z'))
    await h.drain()
    expect(mails.map((m) => m.subject)).toEqual(['Urgent one', 'Quiet one'])
  })

  it('finishes still-pending group members when one member is claimed alone; N = 1 uses the title', async () => {
    h = await notifyHarness({ smtpUrl })
    await h.notify.users.put('u1', { email: 'ann@example.com' })
    await h.notify.users.put('u2', { email: 'bob@example.com' })
    await h.notify.preferences.put({ user_id: '*', topic: '*', channel: 'email', digest: 'weekly' })
    const a = (await h.notify.notifications.send({ topic: 'c', recipients: ['u1', 'u2'], channels: ['email'], title: 'A' })).id
    const b = (await h.notify.notifications.send({ topic: 'c', recipients: ['u1'], channels: ['email'], title: 'B' })).id
    h.clock.set(Date.parse('2026-01-19T00:00:00Z')) // the next Monday, UTC
    const [one] = await h.store.deliveries.claimDue({ limit: 1, now: h.clock.now(), defaultTimeoutMs: 30_000 })
    const res = await h.notify.channels.email.send(one!, new AbortController().signal)
    await h.store.deliveries.settle([{ id: one!.id, claimToken: one!.claimToken, outcome: res.outcome, attempt: res.attempt }], h.clock.now())
    expect(mails).toEqual([expect.objectContaining({ to: ['ann@example.com'], subject: 'You have 2 notifications', text: '• A\n• B' })])
    expect((await statusOf(h, b)).map((s) => s.status)).toEqual(['success'])
    await h.drain()
    expect(mails[1]).toMatchObject({ to: ['bob@example.com'], subject: 'A', text: '• A' })
    expect((await statusOf(h, a)).map((s) => s.status)).toEqual(['success', 'success'])
    expect(mails).toHaveLength(2)
  })
})
