import { afterEach, describe, expect, it } from 'vitest'
import { allPages, apiFixture, type ApiFixture } from './support/api.js'

let f: ApiFixture
afterEach(async () => {
  await f?.close()
})


describe('directory lists are paginated', () => {
  it('subscriptions: pages of `limit` newest first, filtered by topic, until next_cursor is null', async () => {
    f = await apiFixture()
    for (const p of ['user:a', 'user:b', 'user:c', 'user:d', 'user:e']) {
      expect((await f.call('PUT', '/v1/subscriptions', { body: { topic: 'build.failed', principal: p } })).status).toBe(200)
      await new Promise((r) => setTimeout(r, 3)) // distinct created_at, so newest first is visible
    }
    await f.call('PUT', '/v1/subscriptions', { body: { topic: 'other', principal: 'user:z' } })
    const pages = await allPages(f, '/v1/subscriptions?topic=build.failed', 2)
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1])
    expect(pages.flat().map((s) => (s as { principal: string }).principal)).toEqual(['user:e', 'user:d', 'user:c', 'user:b', 'user:a'])
    expect((await allPages(f, '/v1/subscriptions', 4)).flat()).toHaveLength(6)
  })

  it('templates and a user\'s preferences page the same way', async () => {
    f = await apiFixture()
    for (let i = 0; i < 3; i++) {
      expect((await f.call('PUT', '/v1/templates', { body: { topic: 't', channel: 'inbox', subject: `v${i}` } })).status).toBe(201)
    }
    expect((await allPages(f, '/v1/templates?topic=t', 2)).map((p) => p.map((t) => (t as { version: number }).version))).toEqual([[3, 2], [1]])
    for (const channel of ['inbox', 'email', 'webhook']) {
      expect((await f.call('PUT', '/v1/preferences', { body: { user_id: 'u1', topic: '*', channel, enabled: false } })).status).toBe(200)
    }
    const prefs = await allPages(f, '/v1/users/u1/preferences', 2)
    expect(prefs.map((p) => p.length)).toEqual([2, 1])
    expect(new Set(prefs.flat().map((p) => (p as { channel: string }).channel))).toEqual(new Set(['inbox', 'email', 'webhook']))
  })

  it("refuses another list's cursor with 400 validation_failed", async () => {
    f = await apiFixture()
    for (let i = 0; i < 3; i++) await f.call('POST', '/v1/endpoints', { body: { url: `http://127.0.0.1:9/h${i}` } })
    const endpoints = await f.json('GET', '/v1/endpoints?limit=1')
    expect(endpoints.body.next_cursor).toEqual(expect.any(String))
    const r = await f.json('GET', `/v1/subscriptions?cursor=${endpoints.body.next_cursor}`)
    expect(r.status).toBe(400)
    expect(r.body.error.code).toBe('validation_failed')
  })
})
