import { afterEach, describe, expect, it } from 'vitest'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'

let h: NotifyHarness
afterEach(() => h?.cleanup())

const deliveriesOf = (h: NotifyHarness, id: string) => h.store.deliveries.byNotification(id)

describe('notification pipeline (real SQLite)', () => {
  it('fans out to a role, writes the inbox, and dedupes on dedup_key', async () => {
    h = await notifyHarness()
    await h.notify.users.put('u1', { roles: ['admin'] })
    await h.notify.users.put('u2', { roles: ['admin', 'dev'] })
    await h.notify.users.put('u3', { roles: ['dev'] })
    const first = await h.notify.notifications.send({ topic: 'deploy.done', recipients: ['role:admin', 'u2'], title: 'Deployed', dedup_key: 'd1' })
    expect(first).toMatchObject({ deduplicated: false, recipients: 2, deliveries: 2 })
    expect(first.id).toMatch(/^ntf_/)
    const again = await h.notify.notifications.send({ topic: 'deploy.done', recipients: ['role:dev'], title: 'Other', dedup_key: 'd1' })
    expect(again).toEqual({ ...first, deduplicated: true })
    expect((await deliveriesOf(h, first.id)).map((d) => [d.notificationId, d.recipient, d.channel])).toEqual([
      [first.id, 'u1', 'inbox'],
      [first.id, 'u2', 'inbox'],
    ])
    await h.drain()
    expect((await h.notify.inbox('u1').list()).data).toMatchObject([{ topic: 'deploy.done', title: 'Deployed', read: false }])
    expect((await h.notify.inbox('u3').list()).data).toEqual([])
    const got = await h.notify.notifications.get(first.id) as { deliveries: { status: string; channel: string }[] }
    expect(got.deliveries.map((d) => [d.channel, d.status])).toEqual([
      ['inbox', 'success'],
      ['inbox', 'success'],
    ])
  })

  it('defaults to subscribers and expands subscribed roles and bare ids', async () => {
    h = await notifyHarness()
    await h.notify.users.put('a', { teams: ['ops'] })
    await h.notify.users.put('b', { teams: ['ops'] })
    await h.notify.subscriptions.put({ topic: 'incident.opened', principal: 'team:ops' })
    await h.notify.subscriptions.put({ topic: 'incident.opened', principal: 'carol' })
    await h.notify.subscriptions.put({ topic: 'other', principal: 'dave' })
    const r = await h.notify.notifications.send({ topic: 'incident.opened', title: 'Down' })
    expect(r.recipients).toBe(3)
    expect((await deliveriesOf(h, r.id)).map((d) => d.recipient)).toEqual(['a', 'b', 'carol'])
    await h.notify.subscriptions.delete({ topic: 'incident.opened', principal: 'team:ops' })
    expect((await h.notify.notifications.send({ topic: 'incident.opened' })).recipients).toBe(1)
  })

  it('applies preferences per channel; mandatory topics bypass them', async () => {
    h = await notifyHarness({ mandatoryTopics: ['security.'] })
    await h.notify.users.put('u1', { email: 'u1@example.com' })
    await h.notify.preferences.put({ user_id: 'u1', topic: '*', channel: 'email', enabled: false })
    await h.notify.preferences.put({ user_id: '*', topic: 'noisy', channel: '*', enabled: false })
    const a = await h.notify.notifications.send({ topic: 'billing.paid', recipients: ['u1'], channels: ['inbox', 'email'] })
    expect((await deliveriesOf(h, a.id)).map((d) => d.channel)).toEqual(['inbox'])
    expect((await h.notify.notifications.send({ topic: 'noisy', recipients: ['u1', 'u2'] })).deliveries).toBe(0)
    const b = await h.notify.notifications.send({ topic: 'security.login', recipients: ['u1'], channels: ['inbox', 'email'] })
    expect((await deliveriesOf(h, b.id)).map((d) => d.channel)).toEqual(['inbox', 'email'])
  })

  it('holds email and webhook in quiet hours, never the inbox; critical bypasses', async () => {
    h = await notifyHarness()
    h.clock.set(Date.parse('2026-01-15T22:30:00Z')) // 23:30 in Paris
    await h.notify.users.put('u1', { email: 'u1@example.com' })
    await h.notify.preferences.put({ user_id: 'u1', topic: '*', channel: '*', quiet_hours: { tz: 'Europe/Paris', start: '22:00', end: '07:00' } })
    const now = h.clock.now()
    const end = Date.parse('2026-01-16T06:00:00Z')
    const r = await h.notify.notifications.send({ topic: 't', recipients: ['u1'], channels: ['inbox', 'email', 'webhook'] })
    expect((await deliveriesOf(h, r.id)).map((d) => [d.channel, d.nextAttemptAt])).toEqual([
      ['inbox', now],
      ['email', end],
      ['notify-webhook', end],
    ])
    const c = await h.notify.notifications.send({ topic: 't', recipients: ['u1'], channels: ['email'], severity: 'critical' })
    expect((await deliveriesOf(h, c.id))[0]!.nextAttemptAt).toBe(now)
  })

  it('groups digest emails per (recipient, channel, window)', async () => {
    h = await notifyHarness()
    await h.notify.users.put('u1', { email: 'u1@example.com', timezone: 'America/New_York' })
    await h.notify.preferences.put({ user_id: 'u1', topic: '*', channel: 'email', digest: 'daily' })
    const ids: string[] = []
    for (const i of [1, 2, 3]) ids.push((await h.notify.notifications.send({ topic: `t${i}`, recipients: ['u1'], channels: ['email', 'inbox'] })).id)
    const rows = await Promise.all(ids.map((id) => deliveriesOf(h, id)))
    const email = rows.map((r) => r.find((d) => d.channel === 'email')!)
    const windowEnd = Date.parse('2026-01-16T05:00:00Z') // next local midnight in New York
    expect(new Set(email.map((d) => d.groupKey))).toEqual(new Set([`u1|email|${windowEnd}`]))
    expect(email.every((d) => d.nextAttemptAt === windowEnd)).toBe(true)
    expect(rows.map((r) => r.find((d) => d.channel === 'inbox')!.groupKey)).toEqual([null, null, null])
  })

  it('renders the recipient locale with fallback, highest active version', async () => {
    h = await notifyHarness()
    await h.notify.users.put('fr', { locale: 'fr-CA' })
    await h.notify.users.put('de', { locale: 'de' })
    await h.notify.templates.put({ topic: 'c', channel: 'inbox', locale: 'en', subject: 'New comment by {{ payload.who }}' })
    await h.notify.templates.put({ topic: 'c', channel: 'inbox', locale: 'fr', subject: 'v1 {{ payload.who }}' })
    await h.notify.templates.put({ topic: 'c', channel: 'inbox', locale: 'fr', subject: 'Nouveau commentaire de {{ payload.who }}', body: '{{ body }}!' })
    await h.notify.templates.put({ topic: 'c', channel: 'inbox', locale: 'fr', subject: 'inactive', active: false })
    // Newest first: fr v3, fr v2, fr v1, en v1.
    expect((await h.notify.templates.list('c')).data.map((t) => [t.locale, t.version])).toEqual([['fr', 3], ['fr', 2], ['fr', 1], ['en', 1]])
    await h.notify.notifications.send({ topic: 'c', recipients: ['fr', 'de', 'nobody'], payload: { who: 'Ann' }, body: 'Salut' })
    await h.drain()
    expect((await h.notify.inbox('fr').list()).data[0]).toMatchObject({ title: 'Nouveau commentaire de Ann', body: 'Salut!' })
    expect((await h.notify.inbox('de').list()).data[0]).toMatchObject({ title: 'New comment by Ann', body: '' })
  })

  it('renders per recipient only what depends on the recipient, and keeps per-user preferences apart', async () => {
    h = await notifyHarness()
    for (const [id, name] of [['u1', 'Ann'], ['u2', 'Bob'], ['u3', null], ['u4', 'Dee']] as const) await h.notify.users.put(id, { name, roles: ['team'] })
    await h.notify.preferences.put({ user_id: 'u3', topic: 'greet', channel: 'inbox', enabled: false })
    await h.notify.templates.put({ topic: 'greet', channel: 'inbox', locale: 'en', subject: 'Hi {{ recipient.name | default: "there" }}', body: '{{ payload.n }}' })
    await h.notify.templates.put({ topic: 'plain', channel: 'inbox', locale: 'en', subject: 'Build {{ payload.n }}' })
    const g = await h.notify.notifications.send({ topic: 'greet', recipients: ['role:team'], payload: { n: 1 } })
    const p = await h.notify.notifications.send({ topic: 'plain', recipients: ['role:team'], payload: { n: 2 } })
    expect([g.deliveries, p.deliveries]).toEqual([3, 4])
    await h.drain()
    const titles = async (id: string) => (await h.notify.inbox(id).list()).data.map((m) => [m.title, m.body])
    expect(await titles('u1')).toEqual([['Build 2', ''], ['Hi Ann', '1']])
    expect(await titles('u2')).toEqual([['Build 2', ''], ['Hi Bob', '1']])
    expect(await titles('u3')).toEqual([['Build 2', '']])
    expect(await titles('u4')).toEqual([['Build 2', ''], ['Hi Dee', '1']])
  })

  it('reaches external addresses by email only, and publishes webhook notifications', async () => {
    h = await notifyHarness()
    await h.notify.users.put('u1', { email: 'ann@example.com', name: 'Ann' })
    const r = await h.notify.notifications.send({
      topic: 'invoice.due',
      recipients: ['ann@example.com', 'ext@example.org'],
      channels: ['inbox', 'email', 'webhook'],
      title: 'Pay',
    })
    expect(r.recipients).toBe(2)
    expect((await deliveriesOf(h, r.id)).map((d) => [d.recipient, d.channel])).toEqual([
      ['u1', 'inbox'],
      ['u1', 'email'],
      ['u1', 'notify-webhook'],
      ['ext@example.org', 'email'],
    ])
    await h.drain()
    expect(h.published).toEqual([
      {
        type: 'notification.invoice.due',
        id: expect.stringMatching(/^dlv_/),
        data: expect.objectContaining({ title: 'Pay', recipient: expect.objectContaining({ id: 'u1', name: 'Ann' }) }),
      },
    ])
    // SMTP is not configured in this harness: email ends dead with the documented error.
    const email = (await deliveriesOf(h, r.id)).filter((d) => d.channel === 'email')
    expect(email.map((d) => [d.status, d.lastError])).toEqual([
      ['dead', 'channel_not_configured'],
      ['dead', 'channel_not_configured'],
    ])
  })

  it('marks email without an address dead with no_address', async () => {
    h = await notifyHarness({ smtpUrl: 'smtp://127.0.0.1:9' })
    const r = await h.notify.notifications.send({ topic: 't', recipients: ['nomail'], channels: ['email'] })
    await h.drain()
    expect((await deliveriesOf(h, r.id)).map((d) => [d.status, d.lastError])).toEqual([['dead', 'no_address']])
  })

  it('writes an inbox message once even when its delivery is sent twice', async () => {
    h = await notifyHarness()
    const r = await h.notify.notifications.send({ topic: 't', recipients: ['u1'] })
    // Written at accept; a redeliver hands the row to the inbox sender, twice here.
    expect(await h.store.deliveries.redeliver((await h.store.deliveries.byNotification(r.id))[0]!.id, h.clock.now())).toBe('ok')
    const [d] = await h.store.deliveries.claimDue({ limit: 10, now: h.clock.now(), defaultTimeoutMs: 1000 })
    const signal = new AbortController().signal
    expect((await h.notify.channels.inbox.send(d!, signal)).outcome.kind).toBe('success')
    expect((await h.notify.channels.inbox.send(d!, signal)).outcome.kind).toBe('success')
    expect(await h.notify.inbox('u1').list()).toMatchObject({ unread_count: 1, data: [{ topic: 't' }] })
    expect(r.deliveries).toBe(1)
  })
})
