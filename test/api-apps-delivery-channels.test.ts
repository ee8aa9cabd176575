import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'
import { startReceiver, type Receiver } from './support/receiver.js'

// docs/applications.md: a scoped key or portal token sees its application's webhook deliveries;
// durable requests have their own routes (closed to portal tokens) and notification deliveries
// belong to the operator's view.
describe('/v1/deliveries for one application: webhook deliveries only', () => {
  let f: ApiFixture
  let rx: Receiver
  let requestDelivery: string
  let notificationDelivery: string
  const creds: Record<string, string> = {}

  beforeAll(async () => {
    f = await apiFixture()
    rx = await startReceiver()
    await f.json('POST', '/v1/apps', { body: { id: 'a', name: 'a' } })
    await f.json('PUT', '/v1/users/u1', { body: { email: 'u1@example.com' } })
    requestDelivery = (await f.json('POST', '/v1/requests', { body: { url: rx.url, app_id: 'a', delay: '1h' } })).body.delivery_id
    await f.json('POST', '/v1/notifications', { body: { topic: 't', recipients: ['user:u1'], app_id: 'a', title: 'hi' } })
    const all = await f.json('GET', '/v1/deliveries')
    notificationDelivery = all.body.data.find((d: { channel: string }) => d.channel === 'inbox').id
    for (const app of ['a', 'default']) {
      creds[`portal-${app}`] = (await f.json('POST', `/v1/apps/${app}/portal-tokens`, { body: {} })).body.token
      creds[`scoped-${app}`] = (await f.json('POST', '/v1/keys', { body: { role: 'admin', app_id: app } })).body.key
    }
  })
  afterAll(async () => {
    await f.close()
    await rx.close()
  })

  it('lists, reads and redelivers neither requests nor notification deliveries', async () => {
    const got: string[] = []
    for (const [name, key] of Object.entries(creds)) {
      const list = await f.json('GET', '/v1/deliveries', { key })
      got.push(`${name} list ${list.body.data.map((d: { channel: string }) => d.channel).join(',')}`)
      for (const [what, id] of [['request', requestDelivery], ['notification', notificationDelivery]]) {
        got.push(`${name} get ${what} ${(await f.json('GET', `/v1/deliveries/${id}`, { key })).status}`)
        got.push(`${name} redeliver ${what} ${(await f.json('POST', `/v1/deliveries/${id}/redeliver`, { key })).status}`)
      }
    }
    const want = Object.keys(creds).flatMap((name) => [
      `${name} list `,
      `${name} get request 404`,
      `${name} redeliver request 404`,
      `${name} get notification 404`,
      `${name} redeliver notification 404`,
    ])
    expect(got).toEqual(want)
  })

  it('an operator key still sees every channel', async () => {
    const list = await f.json('GET', '/v1/deliveries')
    expect(new Set(list.body.data.map((d: { channel: string }) => d.channel))).toEqual(new Set(['request', 'inbox']))
    expect((await f.json('GET', `/v1/deliveries/${requestDelivery}`)).status).toBe(200)
  })
})
