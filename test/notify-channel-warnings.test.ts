import { afterEach, describe, expect, it } from 'vitest'
import { createLogger } from '../src/log.js'
import { unconfiguredChannelWarnings } from '../src/notify/channel-warnings.js'
import { apiFixture, type ApiFixture } from './support/api.js'

/** Email asked for with no SMTP server configured: said in the answer (`warnings`) and once at start. */
describe('channels referenced but not configured', () => {
  let f: ApiFixture | null = null
  afterEach(async () => {
    await f?.close()
    f = null
  })

  it('a notification asking for email without POSTBOX_SMTP_URL is accepted with a channel_not_configured warning', async () => {
    f = await apiFixture()
    const withEmail = await f.json('POST', '/v1/notifications', { body: { topic: 't', recipients: ['user:u1'], title: 'hi', channels: ['inbox', 'email'] } })
    expect(withEmail.status).toBe(202)
    expect(withEmail.body.warnings).toEqual([{ code: 'channel_not_configured', message: expect.stringContaining('POSTBOX_SMTP_URL') }])
    const inboxOnly = await f.json('POST', '/v1/notifications', { body: { topic: 't', recipients: ['user:u1'], title: 'hi' } })
    expect(inboxOnly.status).toBe(202)
    expect(inboxOnly.body).not.toHaveProperty('warnings')
  })

  it('with POSTBOX_SMTP_URL set there is no warning', async () => {
    f = await apiFixture({ smtpUrl: 'smtp://127.0.0.1:2525' })
    const res = await f.json('POST', '/v1/notifications', { body: { topic: 't', recipients: ['user:u1'], title: 'hi', channels: ['email'] } })
    expect(res.status).toBe(202)
    expect(res.body).not.toHaveProperty('warnings')
    expect(await unconfiguredChannelWarnings(f.pb.store, f.pb.config)).toEqual([])
  })

  it('warns once at start when templates or default preferences use email and no SMTP server is configured', async () => {
    let logged = ''
    f = await apiFixture({ log: createLogger('warn', { write: (line: string) => void (logged += line) }) })
    expect(await unconfiguredChannelWarnings(f.pb.store, f.pb.config)).toEqual([])
    expect((await f.json('PUT', '/v1/templates', { body: { topic: 't', channel: 'email', body: 'b' } })).status).toBe(201)
    expect((await f.json('PUT', '/v1/preferences', { body: { user_id: '*', topic: '*', channel: 'email', enabled: true } })).status).toBe(200)
    expect(await unconfiguredChannelWarnings(f.pb.store, f.pb.config)).toEqual([expect.stringMatching(/POSTBOX_SMTP_URL.*templates and default preferences use email/)])
    f.pb.start()
    for (let i = 0; i < 500 && !logged.includes('channel_not_configured'); i++) await new Promise((r) => setTimeout(r, 10))
    const lines = logged.split('\n').filter((l) => l.includes('channel_not_configured'))
    expect(lines).toHaveLength(1)
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 40, channel: 'email' })
  })
})
