import { afterEach, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'

let f: ApiFixture | null = null
afterEach(async () => {
  await f?.close()
  f = null
})

// docs/applications.md: an application's notification webhook event goes to that application's
// endpoints, never to another application's (the default's).
describe('the notification webhook channel publishes in the notification’s application', () => {
  it('notification.<topic> of app a is an event of a, not of default', async () => {
    f = await apiFixture()
    await f.json('POST', '/v1/apps', { body: { id: 'a', name: 'a' } })
    await f.json('PUT', '/v1/users/u1', { body: { email: 'u1@example.com' } })
    f.pb.start()
    const sent = await f.json('POST', '/v1/notifications', { body: { topic: 'invoice.paid', recipients: ['user:u1'], app_id: 'a', title: 'Paid', channels: ['webhook'] } })
    expect(sent.status).toBe(202)
    let events: { type: string; app_id: string }[] = []
    for (let i = 0; i < 400 && events.length === 0; i++) {
      events = (await f.json('GET', '/v1/events')).body.data
      if (events.length === 0) await new Promise((res) => setTimeout(res, 5))
    }
    expect(events.map((e) => [e.type, e.app_id])).toEqual([['notification.invoice.paid', 'a']])
  })

  it('a notification without app_id still publishes in default', async () => {
    f = await apiFixture()
    await f.json('PUT', '/v1/users/u1', { body: {} })
    f.pb.start()
    await f.json('POST', '/v1/notifications', { body: { topic: 'invoice.paid', recipients: ['user:u1'], title: 'Paid', channels: ['webhook'] } })
    let events: { type: string; app_id: string }[] = []
    for (let i = 0; i < 400 && events.length === 0; i++) {
      events = (await f.json('GET', '/v1/events')).body.data
      if (events.length === 0) await new Promise((res) => setTimeout(res, 5))
    }
    expect(events.map((e) => [e.type, e.app_id])).toEqual([['notification.invoice.paid', 'default']])
  })
})
