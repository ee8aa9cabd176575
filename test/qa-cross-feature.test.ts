import { afterEach, describe, expect, it } from 'vitest'
import { createApp } from '../src/api/app.js'
import { createApiKey } from '../src/auth/keys.js'
import { silentLogger } from '../src/log.js'
import type { WebhookService } from '../src/webhooks/types.js'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'

// Defects found where the merged features meet (docs/applications.md, docs/notifications.md).

let h: NotifyHarness
afterEach(() => h?.cleanup())

/** The real app over the notify harness, with an admin key. */
async function setup() {
  h = await notifyHarness()
  const app = createApp({ store: h.store, config: h.config, log: silentLogger(), clock: h.clock, webhooks: {} as WebhookService, notify: h.notify })
  const admin = (await createApiKey(h.store, { name: 'a', role: 'admin' }, h.clock.now())).key
  const call = async (method: string, path: string, token: string, body?: unknown) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await app.request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    return { status: res.status, body: (await res.json()) as Record<string, any> } // eslint-disable-line @typescript-eslint/no-explicit-any
  }
  return { admin, call }
}

describe('a notification of an application', () => {
  it('makes deliveries of that application (inbox and queued channels)', async () => {
    const { admin, call } = await setup()
    expect((await call('PUT', '/v1/users/u1', admin, { email: 'u1@example.com' })).status).toBe(201)
    const sent = await call('POST', '/v1/notifications', admin, { topic: 't.x', recipients: ['u1'], channels: ['inbox', 'email'], app_id: 'a1' })
    expect(sent.status).toBe(202)
    expect((await h.store.deliveries.byNotification(sent.body.id as string)).map((d) => d.appId)).toEqual(['a1', 'a1'])
    // The filter of GET /v1/deliveries?app_id= and the per-application stats read this column.
    expect((await h.store.deliveries.list({ appId: 'a1', limit: 10 })).data).toHaveLength(2)
    expect((await h.store.deliveries.list({ appId: 'default', limit: 10 })).data).toHaveLength(0)
  })
})

describe('a path with a trailing slash', () => {
  it('is 404 not_found, never a 405 that names the method it was called with', async () => {
    const { apiFixture } = await import('./support/api.js')
    const f = await apiFixture()
    try {
      for (const path of ['/v1/events/', '/console/', '/v1/requests/']) {
        const r = await f.json('GET', path)
        expect([path, r.status, r.body.error.code]).toEqual([path, 404, 'not_found'])
      }
      // A wrong method on the exact path is still a 405.
      expect((await f.call('PUT', '/v1/requests')).status).toBe(405)
    } finally {
      await f.close()
    }
  })
})

describe('GET /v1/requests?limit=', () => {
  it('takes plain decimal digits only, like every other list', async () => {
    const { apiFixture } = await import('./support/api.js')
    const f = await apiFixture()
    try {
      for (const limit of ['0x10', '1e1', '+5', '5.0']) {
        const r = await f.json('GET', `/v1/requests?limit=${encodeURIComponent(limit)}`)
        expect([limit, r.status, r.body.error?.details?.[0]?.field]).toEqual([limit, 400, 'limit'])
      }
      expect((await f.json('GET', '/v1/requests?limit=5')).status).toBe(200)
    } finally {
      await f.close()
    }
  })
})

describe('postbox check on a file of the previous release', () => {
  it('builds the stats store and runs the integrity check over schema 8 (no attempts_started, no app_id)', async () => {
    const Database = (await import('better-sqlite3')).default
    const { MIGRATIONS } = await import('../src/store/sqlite/migrations.js')
    const { SCHEMA_VERSION } = await import('../src/store/schema.js')
    const { createStatsStore } = await import('../src/store/sqlite/stats.js')
    const { tempDir } = await import('./helpers.js')
    const { dir, cleanup } = tempDir('postbox-qa-v8-')
    const db = new Database(`${dir}/postbox.db`)
    try {
      for (const step of MIGRATIONS.slice(0, SCHEMA_VERSION - 1)) db.exec(step)
      db.pragma(`user_version = ${SCHEMA_VERSION - 1}`)
      expect(createStatsStore(db).integrityCheck()).toEqual([])
    } finally {
      db.close()
      cleanup()
    }
  })
})

describe('postbox send-request --app', () => {
  it('puts the request in that application, and refuses an unknown one (exit 2)', async () => {
    const { ensureBuilt, killAllChildren, newAdminKey, runCli, serverEnv } = await import('./support/server-process.js')
    const { tempDir } = await import('./helpers.js')
    const { openStore } = await import('../src/store/index.js')
    await ensureBuilt()
    const { dir, cleanup } = tempDir('postbox-qa-send-request-')
    try {
      const env = serverEnv(dir, newAdminKey())
      expect((await runCli(['migrate'], env)).code).toBe(0)
      const store = openStore(`${dir}/postbox.db`)
      await store.apps.insert({ id: 'acme', name: 'Acme', metadata: {} }, Date.now())
      await store.close()
      const r = await runCli(['send-request', 'https://api.example.com/ping', '--delay', '1h', '--app', 'acme'], env)
      expect(r.code, r.output).toBe(0)
      expect(JSON.parse(r.output)).toMatchObject({ app_id: 'acme' })
      const bad = await runCli(['send-request', 'https://api.example.com/ping', '--app', 'nope'], env)
      expect([bad.code, bad.output]).toEqual([2, expect.stringContaining('no application nope')])
    } finally {
      await killAllChildren()
      cleanup()
    }
  }, 180_000)
})

describe('GET /v1/stats?app_id=', () => {
  it("answers the application's next_due_at (a delayed event's time), as the unfiltered stats do", async () => {
    const { apiFixture } = await import('./support/api.js')
    const f = await apiFixture()
    try {
      expect((await f.json('POST', '/v1/apps', { body: { id: 'acme', name: 'Acme' } })).status).toBe(201)
      expect((await f.json('POST', '/v1/endpoints', { body: { app_id: 'acme', url: 'https://example.com/a' } })).status).toBe(201)
      const sent = await f.json('POST', '/v1/events', { body: { app_id: 'acme', type: 'a', data: {}, delay: '1h' } })
      expect(sent.status).toBe(202)
      const all = await f.json('GET', '/v1/stats')
      expect(all.body.next_due_at).toBe(sent.body.deliver_at)
      const one = await f.json('GET', '/v1/stats?app_id=acme')
      expect(one.body.next_due_at).toBe(sent.body.deliver_at)
      expect((await f.json('GET', '/v1/stats?app_id=default')).body.next_due_at).toBeNull()
    } finally {
      await f.close()
    }
  })
})

describe('a notification dedup_key already used in another application', () => {
  it('is a new notification of this application, never the other one’s answered as a repeat', async () => {
    const { admin, call } = await setup()
    expect((await call('PUT', '/v1/users/u1', admin, {})).status).toBe(201)
    const first = await call('POST', '/v1/notifications', admin, { topic: 't.x', recipients: ['u1'], app_id: 'a1', dedup_key: 'inv-1' })
    expect(first.status).toBe(202)
    const repeat = await call('POST', '/v1/notifications', admin, { topic: 't.x', recipients: ['u1'], app_id: 'a1', dedup_key: 'inv-1' })
    expect(repeat.body).toMatchObject({ id: first.body.id, deduplicated: true })
    const other = await call('POST', '/v1/notifications', admin, { topic: 't.x', recipients: ['u1'], app_id: 'a2', dedup_key: 'inv-1' })
    expect(other.status).toBe(202)
    expect(other.body).toMatchObject({ deduplicated: false, recipients: 1 })
    expect(other.body.id).not.toBe(first.body.id)
    const again = await call('POST', '/v1/notifications', admin, { topic: 't.x', recipients: ['u1'], app_id: 'a2', dedup_key: 'inv-1' })
    expect(again.body).toMatchObject({ id: other.body.id, deduplicated: true })
    expect((await call('GET', `/v1/notifications/${first.body.id}`, admin)).body).toMatchObject({ app_id: 'a1', dedup_key: 'inv-1' })
    expect((await call('GET', `/v1/notifications/${other.body.id}`, admin)).body).toMatchObject({ app_id: 'a2', dedup_key: 'inv-1' })
  })
})
