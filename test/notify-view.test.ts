import { afterEach, describe, expect, it } from 'vitest'
import { NOTIFICATION_DELIVERIES_SHOWN } from '../src/notify/service.js'
import { allPages, apiFixture, type ApiFixture } from './support/api.js'

let f: ApiFixture | undefined
afterEach(async () => {
  await f?.close()
  f = undefined
})

describe('GET /v1/notifications/:id', () => {
  it(`embeds at most ${NOTIFICATION_DELIVERIES_SHOWN} deliveries, counts them all, and the deliveries list pages through every one`, async () => {
    f = await apiFixture()
    const users = NOTIFICATION_DELIVERIES_SHOWN + 5
    const pb = f.pb
    await pb.store.tx(async (s) => {
      for (let i = 0; i < users; i++) await s.directory.putUser(`u${i}`, { roles: ['everyone'] }, Date.now())
    })
    const sent = await f.json('POST', '/v1/notifications', { body: { topic: 'big', recipients: ['role:everyone'], title: 't' } })
    expect(sent.status).toBe(202)
    const got = (await f.json('GET', `/v1/notifications/${sent.body.id}`, { key: f.keys.viewer })).body
    expect(got.deliveries).toHaveLength(NOTIFICATION_DELIVERIES_SHOWN)
    expect(got.deliveries_truncated).toBe(true)
    // Inbox deliveries are written, and shown, as delivered by the accept transaction itself.
    expect(got.delivery_counts).toEqual({ pending: 0, in_flight: 0, success: users, dead: 0, cancelled: 0 })
    const pages = await allPages<{ id: string }>(f, `/v1/deliveries?notification_id=${sent.body.id}`, 200, 10)
    const seen = new Set(pages.flat().map((d) => d.id))
    expect(seen.size).toBe(users)

    const small = await f.json('POST', '/v1/notifications', { body: { topic: 'small', recipients: ['u1', 'u2'], title: 't' } })
    const one = (await f.json('GET', `/v1/notifications/${small.body.id}`)).body
    expect(one).toMatchObject({ deliveries_truncated: false, delivery_counts: { pending: 0, success: 2 } })
    expect(one.deliveries.map((d: { recipient: string }) => d.recipient).sort()).toEqual(['u1', 'u2'])
  })
})

describe('library lists take any limit', () => {
  it('clamps it to 1–200 as the HTTP API does, instead of throwing on 0', async () => {
    f = await apiFixture()
    await f.pb.subscriptions.put({ topic: 'a', principal: 'user:x' })
    await f.pb.subscriptions.put({ topic: 'b', principal: 'user:y' })
    const one = await f.pb.subscriptions.list(undefined, { limit: 0 })
    expect(one.data).toHaveLength(1)
    expect(one.next_cursor).not.toBeNull()
    expect((await f.pb.subscriptions.list(undefined, { limit: 1000 })).data).toHaveLength(2)
  })
})
