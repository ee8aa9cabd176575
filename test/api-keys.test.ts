import { statSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createApp } from '../src/api/app.js'
import { hashKey } from '../src/auth/keys.js'
import { Postbox } from '../src/postbox.js'
import { tempDir } from './helpers.js'
import { apiFixture, ADMIN_KEY, type ApiFixture } from './support/api.js'
import { createLogger } from '../src/log.js'

type Role = 'admin' | 'publisher' | 'viewer'
const ROLES: Role[] = ['admin', 'publisher', 'viewer']

/** Every key-authenticated route of the webhook API and who may call it (docs/api.md roles). */
const MATRIX: { method: string; path: string; body?: unknown; allowed: Role[] }[] = [
  { method: 'POST', path: '/v1/keys', body: { role: 'viewer' }, allowed: ['admin'] },
  { method: 'GET', path: '/v1/keys', allowed: ['admin', 'viewer'] },
  { method: 'DELETE', path: '/v1/keys/key_unknown', allowed: ['admin'] },
  { method: 'POST', path: '/v1/endpoints', body: { url: 'http://127.0.0.1:9/x' }, allowed: ['admin'] },
  { method: 'GET', path: '/v1/endpoints', allowed: ['admin', 'viewer'] },
  { method: 'GET', path: '/v1/endpoints/ep_unknown', allowed: ['admin', 'viewer'] },
  { method: 'PATCH', path: '/v1/endpoints/ep_unknown', body: { description: 'x' }, allowed: ['admin'] },
  { method: 'DELETE', path: '/v1/endpoints/ep_unknown', allowed: ['admin'] },
  { method: 'GET', path: '/v1/endpoints/ep_unknown/secret', allowed: ['admin'] },
  { method: 'POST', path: '/v1/endpoints/ep_unknown/secret/rotate', body: {}, allowed: ['admin'] },
  { method: 'POST', path: '/v1/endpoints/ep_unknown/enable', allowed: ['admin'] },
  { method: 'POST', path: '/v1/endpoints/ep_unknown/recover', body: { since: '2026-01-01T00:00:00Z' }, allowed: ['admin'] },
  { method: 'POST', path: '/v1/endpoints/ep_unknown/test', allowed: ['admin'] },
  { method: 'POST', path: '/v1/events', body: { type: 'a.b', data: {} }, allowed: ['admin', 'publisher'] },
  { method: 'POST', path: '/v1/events/batch', body: { events: [{ type: 'a.b', data: {} }] }, allowed: ['admin', 'publisher'] },
  { method: 'GET', path: '/v1/events/evt_unknown', allowed: ['admin', 'viewer'] },
  { method: 'GET', path: '/v1/deliveries', allowed: ['admin', 'viewer'] },
  { method: 'GET', path: '/v1/deliveries/dlv_unknown', allowed: ['admin', 'viewer'] },
  { method: 'POST', path: '/v1/deliveries/dlv_unknown/redeliver', allowed: ['admin'] },
  { method: 'GET', path: '/metrics', allowed: ['admin', 'viewer'] },
]

describe('roles', () => {
  let f: ApiFixture
  beforeEach(async () => {
    f = await apiFixture()
  })
  afterEach(async () => f.close())

  for (const route of MATRIX) {
    for (const role of ROLES) {
      const allowed = route.allowed.includes(role)
      it(`${route.method} ${route.path} as ${role} → ${allowed ? 'allowed' : '403 forbidden'}`, async () => {
        const res = await f.json(route.method, route.path, { key: f.keys[role], body: route.body })
        if (allowed) expect([401, 403]).not.toContain(res.status)
        else expect(res).toMatchObject({ status: 403, body: { error: { code: 'forbidden' } } })
      })
    }
    it(`${route.method} ${route.path} without a key → 401 unauthorized`, async () => {
      const res = await f.json(route.method, route.path, { key: null, body: route.body })
      expect(res).toMatchObject({ status: 401, body: { error: { code: 'unauthorized' } } })
    })
    it(`${route.method} ${route.path} with an unknown key → 401 invalid_token`, async () => {
      const res = await f.json(route.method, route.path, { key: 'pbk_' + 'Z'.repeat(43), body: route.body })
      expect(res).toMatchObject({ status: 401, body: { error: { code: 'invalid_token' } } })
    })
  }
})

describe('keys', () => {
  let f: ApiFixture
  beforeEach(async () => {
    f = await apiFixture()
  })
  afterEach(async () => f.close())

  it('creates a key shown once, stores only its hash, and lists it without the key', async () => {
    const created = await f.json('POST', '/v1/keys', { body: { name: 'ci', role: 'publisher' } })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ name: 'ci', role: 'publisher', revoked: false })
    expect(created.body.key).toMatch(/^pbk_[A-Za-z0-9_-]{43}$/)
    expect(created.body.id).toMatch(/^key_/)
    const row = (await f.pb.store.keys.get(created.body.id))!
    expect(row.hash).toBe(hashKey(created.body.key))
    expect(JSON.stringify(row)).not.toContain(created.body.key)
    const list = await f.json('GET', '/v1/keys')
    expect(list.status).toBe(200)
    expect(list.body.data.map((k: { id: string }) => k.id)).toContain(created.body.id)
    expect(JSON.stringify(list.body)).not.toContain(created.body.key)
    expect(list.body.data.every((k: Record<string, unknown>) => !('hash' in k) && !('key' in k))).toBe(true)
    const use = await f.json('POST', '/v1/events', { key: created.body.key, body: { type: 'a.b', data: {} } })
    expect(use.status).toBe(202)
  })

  it('rejects a bad role and a bad name with validation_failed', async () => {
    const res = await f.json('POST', '/v1/keys', { body: { role: 'root', name: '' } })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe('validation_failed')
    expect(res.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(['name', 'role'])
  })

  it('paginates keys with limit and cursor', async () => {
    for (let i = 0; i < 5; i++) await f.json('POST', '/v1/keys', { body: { role: 'viewer', name: `k${i}` } })
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const page: Awaited<ReturnType<ApiFixture['json']>> = await f.json('GET', `/v1/keys?limit=3${cursor ? `&cursor=${cursor}` : ''}`)
      expect(page.status).toBe(200)
      expect(page.body.data.length).toBeLessThanOrEqual(3)
      seen.push(...page.body.data.map((k: { id: string }) => k.id))
      cursor = page.body.next_cursor
    } while (cursor)
    expect(seen.length).toBe(8)
    expect(new Set(seen).size).toBe(8)
    expect([...seen].sort().reverse()).toEqual(seen)
  })

  describe('revoke rules (docs/api.md)', () => {
    it('own key → 403 self_revoke_forbidden', async () => {
      const own = (await f.pb.store.keys.byHash(hashKey(ADMIN_KEY)))!
      const res = await f.json('DELETE', `/v1/keys/${own.id}`)
      expect(res).toMatchObject({ status: 403, body: { error: { code: 'self_revoke_forbidden' } } })
    })
    it('unknown id → 404 not_found', async () => {
      const res = await f.json('DELETE', '/v1/keys/key_nope')
      expect(res).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } })
    })
    it('non-admin caller → 403 forbidden', async () => {
      const target = (await f.json('POST', '/v1/keys', { body: { role: 'viewer' } })).body.id
      for (const key of [f.keys.viewer, f.keys.publisher]) {
        const res = await f.json('DELETE', `/v1/keys/${target}`, { key })
        expect(res).toMatchObject({ status: 403, body: { error: { code: 'forbidden' } } })
      }
    })
    it('another key → 200 {revoked: true}, after which it is invalid_token; a repeat is still 200', async () => {
      const created = (await f.json('POST', '/v1/keys', { body: { role: 'admin' } })).body
      const res = await f.json('DELETE', `/v1/keys/${created.id}`)
      expect(res).toEqual({ status: 200, body: { revoked: true } })
      const after = await f.json('GET', '/v1/keys', { key: created.key })
      expect(after).toMatchObject({ status: 401, body: { error: { code: 'invalid_token' } } })
      expect((await f.json('DELETE', `/v1/keys/${created.id}`)).status).toBe(200)
    })
    it('the last active admin key → 409 last_admin (caller revoked concurrently, after authenticating)', async () => {
      const second = (await f.json('POST', '/v1/keys', { body: { role: 'admin' } })).body
      const first = (await f.pb.store.keys.byHash(hashKey(ADMIN_KEY)))!
      await f.pb.store.keys.revoke(first.id, Date.now())
      // The race: the caller's key was valid when it authenticated and is revoked by the time
      // the revoke runs, so `second` is the last active admin.
      const store = f.pb.store
      const racing = { ...store, keys: { ...store.keys, byHash: async (h: string) => ({ ...(await store.keys.byHash(h))!, revokedAt: null }) } }
      const app = createApp({ store: racing, config: f.pb.config, log: f.pb.log, clock: f.pb.clock, webhooks: f.pb.webhooks })
      const res = await app.request(`/v1/keys/${second.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN_KEY}` } })
      expect(res.status).toBe(409)
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('last_admin')
      expect(await store.keys.countActiveAdmins()).toBe(1)
    })
  })
})

describe('first start (docs/api.md)', () => {
  let cleanup: () => void
  let dir: string
  beforeEach(() => {
    ;({ dir, cleanup } = tempDir())
  })
  afterEach(() => cleanup())

  it('generates an admin key into <data dir>/admin-key.txt with mode 0600 and never logs it', async () => {
    const lines: string[] = []
    const { createLogger } = await import('../src/log.js')
    const log = createLogger('info', { write: (s: string) => void lines.push(s) })
    const pb = await Postbox.open({ dataDir: dir, log })
    try {
      const file = join(dir, 'admin-key.txt')
      const key = readFileSync(file, 'utf8').trim()
      expect(key).toMatch(/^pbk_/)
      expect(statSync(file).mode & 0o777).toBe(0o600)
      expect(lines.join('')).toContain(file)
      expect(lines.join('')).not.toContain(key)
      const res = await pb.app.request('/v1/keys', { headers: { authorization: `Bearer ${key}` } })
      expect(res.status).toBe(200)
    } finally {
      await pb.close()
    }
    // a second start with an admin present changes nothing
    const again = await Postbox.open({ dataDir: dir })
    expect(again.adminKey.action).toBe('none')
    await again.close()
  })

  it('uses POSTBOX_ADMIN_KEY when no admin exists yet, and only then (warning when another one is ignored)', async () => {
    let logged = ''
    const log = createLogger('info', { write: (line: string) => void (logged += line) })
    const pb = await Postbox.open({ dataDir: dir, adminKey: ADMIN_KEY, log })
    expect(pb.adminKey.action).toBe('from_env')
    expect((await pb.app.request('/v1/keys', { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).status).toBe(200)
    await pb.close()
    // The same key on the next start: the normal case, nothing to say.
    await (await Postbox.open({ dataDir: dir, adminKey: ADMIN_KEY, log })).close()
    expect(logged).not.toContain('was ignored')
    const other = 'pbk_' + 'B'.repeat(43)
    const pb2 = await Postbox.open({ dataDir: dir, adminKey: other, log })
    expect(pb2.adminKey.action).toBe('none')
    expect((await pb2.app.request('/v1/keys', { headers: { authorization: `Bearer ${other}` } })).status).toBe(401)
    await pb2.close()
    expect(logged).toContain('POSTBOX_ADMIN_KEY is set but is not an active admin key here, and was ignored')
    expect(logged).not.toContain(other)
  })

  it('refuses a POSTBOX_ADMIN_KEY that is not a pbk_ key, naming the variable', async () => {
    await expect(Postbox.open({ dataDir: dir, adminKey: 'short' })).rejects.toThrow(/POSTBOX_ADMIN_KEY/)
  })
})
