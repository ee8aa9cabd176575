import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger } from '../src/log.js'
import { apiFixture, type ApiFixture } from './support/api.js'

let f: ApiFixture | undefined
afterEach(async () => {
  await f?.close()
  f = undefined
})

/** Every `pattern` in an OpenAPI document, by JSON path. */
function patterns(doc: unknown, path = ''): [string, string][] {
  if (!doc || typeof doc !== 'object') return []
  return Object.entries(doc).flatMap(([k, v]) =>
    k === 'pattern' && typeof v === 'string' ? [[path, v] as [string, string]] : patterns(v, `${path}.${k}`),
  )
}

const send = (fx: ApiFixture, body: Record<string, unknown>) => fx.json('POST', '/v1/notifications', { body: { topic: 't', ...body } })

describe('OpenAPI patterns are plain ECMA regexes', () => {
  it('NotificationIn.action_url: the published pattern accepts and rejects what the validator does', async () => {
    f = await apiFixture()
    const doc = (await f.json('GET', '/openapi.json')).body
    const pattern = doc.components.schemas.NotificationIn.properties.action_url.pattern as string
    for (const flags of ['', 'u']) {
      const re = new RegExp(pattern, flags)
      expect(re.test('https://ok.com/x')).toBe(true)
      for (const url of ['https://ok.com/x', 'HTTP://Ok.com', 'hTtPs://a/b?c#d', '/inbox/1', 'javascript:alert(1)', '//evil.com', '/\\evil', 'ftp://x.com', 'https:///x', 'https://a b', 'x']) {
        const accepted = (await send(f, { action_url: url })).status === 202
        expect([url, re.test(url)]).toEqual([url, accepted])
      }
    }
  })

  it('no pattern in /openapi.json carries regex flags, and each compiles in unicode mode', async () => {
    f = await apiFixture()
    const all = patterns((await f.json('GET', '/openapi.json')).body)
    expect(all.length).toBeGreaterThan(10)
    for (const [path, p] of all) {
      expect([path, /\/[dgimsuvy]+$/.test(p)]).toEqual([path, false])
      expect(() => new RegExp(p, 'u')).not.toThrow()
    }
  })
})

describe('preference rows refuse settings that would never take effect', () => {
  const put = (fx: ApiFixture, body: Record<string, unknown>) => fx.json('PUT', '/v1/preferences', { body })
  const qh = { tz: 'Europe/Paris', start: '22:00', end: '07:00' }

  it('quiet_hours only on a "*" channel row; digest only on email or "*" rows', async () => {
    f = await apiFixture()
    for (const channel of ['email', 'inbox', 'webhook']) {
      const r = await put(f, { user_id: 'u_x', topic: '*', channel, quiet_hours: qh })
      expect(r.status).toBe(400)
      expect(r.body.error.code).toBe('validation_failed')
      expect(r.body.error.details).toEqual([{ field: 'quiet_hours', message: expect.stringContaining('channel "*"'), in: 'body' }])
    }
    for (const channel of ['inbox', 'webhook']) {
      const r = await put(f, { user_id: '*', topic: 'a.b', channel, digest: 'daily' })
      expect(r.status).toBe(400)
      expect(r.body.error.details).toEqual([{ field: 'digest', message: expect.stringContaining('only to email'), in: 'body' }])
    }
    expect((await f.json('GET', '/v1/users/u_x/preferences')).body.data).toEqual([])
    expect((await put(f, { user_id: 'u_x', topic: '*', channel: '*', quiet_hours: qh, digest: 'weekly' })).status).toBe(200)
    expect((await put(f, { user_id: 'u_x', topic: '*', channel: 'email', digest: 'daily', quiet_hours: null })).status).toBe(200)
    expect((await put(f, { user_id: 'u_x', topic: '*', channel: 'inbox', digest: 'none', enabled: false })).status).toBe(200)
    // Every row a GET returns can be PUT back as it is.
    const rows = (await f.json('GET', '/v1/users/u_x/preferences')).body.data as Record<string, unknown>[]
    expect(rows).toHaveLength(3)
    for (const { updated_at: _u, ...row } of rows) expect((await put(f, row)).status).toBe(200)
    expect((await f.json('GET', '/v1/users/*/preferences')).status).toBe(200)
  })
})

describe('validation messages name what is accepted', () => {
  it('a preference channel, topic or user_id that is wrong or missing lists the accepted values', async () => {
    f = await apiFixture()
    const put = (body: Record<string, unknown>) => f!.json('PUT', '/v1/preferences', { body })
    const sms = await put({ user_id: 'u_1', topic: '*', channel: 'sms', enabled: false })
    expect(sms.status).toBe(400)
    expect(sms.body.error.details).toEqual([{ field: 'channel', message: 'expected one of inbox, email, webhook, *', in: 'body' }])
    const empty = await put({})
    expect(empty.status).toBe(400)
    expect(empty.body.error.details).toEqual([
      { field: 'user_id', message: expect.stringMatching(/^is required: "\*" or a user id of 1–200 characters/), in: 'body' },
      { field: 'topic', message: 'is required: "*" or a topic matching [a-z0-9_.:-]{1,200}', in: 'body' },
      { field: 'channel', message: 'is required: one of inbox, email, webhook, *', in: 'body' },
    ])
    const tpl = await f.json('PUT', '/v1/templates', { body: { topic: 't', channel: 'sms', locale: 'en', subject: 's', body: 'b' } })
    expect(tpl.body.error.details).toEqual([{ field: 'channel', message: 'expected one of inbox, email, webhook', in: 'body' }])
  })
})

describe('subscriptions can be turned off and on', () => {
  it('PUT with enabled: false keeps the row, answers enabled: false, and the topic\'s subscribers skip it', async () => {
    f = await apiFixture()
    const sub = (body: Record<string, unknown>) => f!.json('PUT', '/v1/subscriptions', { body: { topic: 'del.t', principal: 'user:u_del', ...body } })
    expect((await sub({})).body).toMatchObject({ topic: 'del.t', principal: 'user:u_del', enabled: true })
    const off = await sub({ enabled: false })
    expect([off.status, off.body.enabled]).toEqual([200, false])
    expect((await f.json('GET', '/v1/subscriptions?topic=del.t')).body.data).toMatchObject([{ principal: 'user:u_del', enabled: false }])
    expect((await send(f, { topic: 'del.t' })).body).toMatchObject({ recipients: 0, deliveries: 0 })
    // A PUT without `enabled` subscribes again, as it creates.
    expect((await sub({})).body.enabled).toBe(true)
    expect((await send(f, { topic: 'del.t' })).body).toMatchObject({ recipients: 1, deliveries: 1 })
    expect((await sub({ enabled: 'no' })).status).toBe(400)
  })
})

describe('one user-id rule everywhere', () => {
  it('path ids: NUL and other control characters are refused like a newline', async () => {
    f = await apiFixture()
    for (const id of ['%00', 'a%0Ab', '%7F', 'u%C2%85', 'a%3Ab', '*']) {
      for (const [method, path, body] of [
        ['PUT', `/v1/users/${id}`, {}],
        ['GET', `/v1/users/${id}`, undefined],
        ['DELETE', `/v1/users/${id}`, undefined],
        ['POST', `/v1/users/${id}/tokens`, {}],
      ] as const) {
        const r = await f.json(method, path, body === undefined ? {} : { body })
        expect([method, path, r.status, r.body.error?.code]).toEqual([method, path, 400, 'validation_failed'])
      }
    }
    expect((await f.json('GET', '/v1/users/a%3Ab/preferences')).status).toBe(400)
    expect((await f.json('PUT', '/v1/users/u_1', { body: {} })).status).toBe(201)
    expect((await f.json('POST', '/v1/users/u_1/tokens', { body: {} })).status).toBe(201)
  })

  it('subscriptions and preferences refuse control characters in ids and names', async () => {
    f = await apiFixture()
    for (const principal of ['user:a\u0000', 'a\u0000', 'role:\u0001', 'team:x\u007f', 'user:a:b', '*']) {
      const r = await f.json('PUT', '/v1/subscriptions', { body: { topic: 't', principal } })
      expect([principal, r.status]).toEqual([principal, 400])
    }
    const r = await f.json('PUT', '/v1/preferences', { body: { user_id: 'a\u0000', topic: '*', channel: '*', enabled: false } })
    expect(r.status).toBe(400)
    expect(r.body.error.details[0].field).toBe('user_id')
    expect((await f.json('PUT', '/v1/users/x', { body: { roles: ['ok', 'b\u0000d'] } })).status).toBe(400)
  })

  it('recipients that are not valid ids are refused by index, and nothing is written', async () => {
    f = await apiFixture()
    const recipients = ['u1', ':', '*', 'user:a:b', 'a\u0000', 'role:', 'ann@example.com', 'subscribers', 'team:x\u0085', 'user:']
    const r = await send(f, { recipients, channels: ['inbox'] })
    expect(r.status).toBe(400)
    expect(r.body.error.code).toBe('validation_failed')
    expect(r.body.error.details.map((d: { field: string }) => d.field)).toEqual([
      'recipients.1',
      'recipients.2',
      'recipients.3',
      'recipients.4',
      'recipients.5',
      'recipients.8',
      'recipients.9',
    ])
    expect((await f.json('GET', '/v1/deliveries')).body.data).toEqual([])
    expect((await send(f, { recipients: ['u1', 'user:u2', 'ann@example.com', 'role:admin'], channels: ['inbox'] })).status).toBe(202)
  })

  it('PUT /v1/users, tokens, subscriptions and user: recipients accept exactly the same ids', async () => {
    f = await apiFixture()
    const fx = f
    const char = fc.oneof(fc.constantFrom('a', 'Z', '0', '_', '-', '@', '.', ':', '*', ' ', '\u0000', '\n', '\u007f', '\u0085', '\u00a0', 'é', '\u2028'), fc.integer({ min: 0, max: 0x3000 }).map((n) => String.fromCharCode(n)))
    const id = fc
      .array(char, { minLength: 0, maxLength: 6 })
      .map((cs) => cs.join(''))
      // "/" splits the path, "." and ".." are resolved by URL parsing, and a selector is read trimmed.
      .filter((s) => !s.includes('/') && s !== '.' && s !== '..' && s.trim() === s)
    await fc.assert(
      fc.asyncProperty(id, async (s) => {
        const path = encodeURIComponent(s)
        const user = s === '' ? 404 : (await fx.json('PUT', `/v1/users/${path}`, { body: {} })).status
        const ok = user === 200 || user === 201
        const token = s === '' ? 404 : (await fx.json('POST', `/v1/users/${path}/tokens`, { body: {} })).status
        const sub = (await fx.json('PUT', '/v1/subscriptions', { body: { topic: 't', principal: `user:${s}` } })).status
        const note = (await send(fx, { recipients: [`user:${s}`] })).status
        expect({ s, token: token === 201, sub: sub === 200, note: note === 202 }).toEqual({ s, token: ok, sub: ok, note: ok })
      }),
      { numRuns: 150 },
    )
  })
})

describe('template failures are logged', () => {
  it('logs one warning per failing template per notification, with no payload', async () => {
    const lines: Record<string, unknown>[] = []
    const log = createLogger('info', { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) })
    f = await apiFixture({ log })
    const runaway = '{% for i in (1..100000000) %}{{ i }}{% endfor %}'
    const tpl = { topic: 'boom', channel: 'inbox', locale: 'en', subject: 'Hi {{ recipient.id }}', body: runaway }
    expect((await f.json('PUT', '/v1/templates', { body: { ...tpl, body: 'v1' } })).status).toBe(201)
    expect((await f.json('PUT', '/v1/templates', { body: tpl })).status).toBe(201)
    const body = { topic: 'boom', recipients: ['u1', 'u2', 'u3'], payload: { marker: 'PAYLOAD-SECRET' } }
    expect((await f.json('POST', '/v1/notifications', { body })).status).toBe(202)
    const warnings = () => lines.filter((l) => l.level === 40)
    expect(warnings()).toEqual([
      expect.objectContaining({ topic: 'boom', channel: 'inbox', locale: 'en', template_version: 2, error: expect.stringMatching(/limit/) }),
    ])
    expect(JSON.stringify(lines)).not.toContain('PAYLOAD-SECRET')
    // A template that works logs nothing; the failing one logs again for the next notification.
    expect((await f.json('POST', '/v1/notifications', { body: { topic: 'fine', recipients: ['u1'] } })).status).toBe(202)
    expect(warnings()).toHaveLength(1)
    expect((await f.json('POST', '/v1/notifications', { body: { ...body, dedup_key: 'k' } })).status).toBe(202)
    expect(warnings()).toHaveLength(2)
  })
})

describe('channel names agree between views', () => {
  it('a notification webhook delivery is notify-webhook in GET /v1/notifications/:id and GET /v1/deliveries', async () => {
    f = await apiFixture()
    const r = await send(f, { recipients: ['u1'], channels: ['inbox', 'webhook'] })
    expect(r.status).toBe(202)
    const got = (await f.json('GET', `/v1/notifications/${r.body.id}`)).body
    const listed = (await f.json('GET', '/v1/deliveries')).body.data as { id: string; channel: string; notification_id: string }[]
    const byId = new Map(listed.filter((d) => d.notification_id === r.body.id).map((d) => [d.id, d.channel]))
    const shown = (got.deliveries as { id: string; channel: string }[]).map((d) => [d.id, d.channel])
    expect(shown.map(([, c]) => c)).toEqual(['inbox', 'notify-webhook'])
    expect(shown).toEqual(shown.map(([id]) => [id, byId.get(id!)]))
    const doc = (await f.json('GET', '/openapi.json')).body
    expect(doc.components.schemas.Notification.properties.deliveries.items.properties.channel.enum).toEqual(['inbox', 'email', 'notify-webhook'])
  })
})
