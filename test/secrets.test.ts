/* eslint-disable @typescript-eslint/no-explicit-any */
import { randomBytes } from 'node:crypto'
import { chmodSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from './helpers.js'
import { startRecordingReceiver } from './support/hostile-receivers.js'
import { createLogger } from '../src/log.js'
import { apiFixture } from './support/api.js'
import { apiClient, ensureBuilt, killAllChildren, newAdminKey, serverEnv, startServer } from './support/server-process.js'

/**
 * Secrets never leak: a scenario that creates, rotates and reads signing secrets, creates and
 * revokes keys, issues user tokens and fails authentication in every way; then the server's
 * whole log, every list/get response and every error message are searched for every secret.
 */

const cleanups: (() => void | Promise<void>)[] = []

beforeAll(async () => {
  await ensureBuilt()
}, 180_000)

afterAll(async () => {
  await killAllChildren()
  for (const c of cleanups.reverse()) await c()
})

/** The strings to search for: each secret, and its random part alone (a log might strip the prefix). */
function needles(secrets: string[]): string[] {
  const out = new Set<string>()
  for (const s of secrets) {
    out.add(s)
    const m = /^(whsec_|pbk_|pbu_)(.+)$/.exec(s)
    if (m && m[2]!.length >= 16) out.add(m[2]!.slice(0, 32))
  }
  return [...out]
}

function leaks(haystack: string, secrets: string[]): string[] {
  return needles(secrets).filter((n) => haystack.includes(n))
}

type Call = (method: string, path: string, body?: unknown, auth?: string | null) => Promise<{ status: number; json: any; text: string }>

/**
 * The scenario: endpoint secrets generated, supplied, plain (hmac-sha256), rotated, read and
 * refused; keys created, used, revoked; failed authentication of every shape; user tokens issued,
 * used in the header and in ?token=, forged. Returns every secret and every response that must
 * not contain one (list/get responses and error messages).
 */
async function scenario(call: Call, receiverUrl: string, tokenKey: () => string): Promise<{ secrets: string[]; visible: string[] }> {
  const adminKey = (call as Call & { key: string }).key
  const as = (k: string): Call => (m, p, b, a) => call(m, p, b, a === undefined ? k : a)
  const secrets: string[] = [adminKey]
  const visible: string[] = []
  const see = (r: { status: number; text: string }) => {
    visible.push(`${r.status} ${r.text}`)
    return r
  }

  const supplied = `whsec_${randomBytes(32).toString('base64')}`
  const plain = `plain-shared-${randomBytes(12).toString('hex')}`
  const e1 = await call('POST', '/v1/endpoints', { url: receiverUrl, headers: { 'x-tenant': 'acme' } })
  const e2 = await call('POST', '/v1/endpoints', { url: receiverUrl, secret: supplied, event_types: ['none.*'] })
  const e3 = await call('POST', '/v1/endpoints', { url: receiverUrl, secret: plain, signature: 'hmac-sha256', event_types: ['none.*'] })
  for (const e of [e1, e2, e3]) expect(e.status, e.text).toBe(201)
  secrets.push(e1.json.secret, supplied, plain)
  expect(e2.json.secret).toBe(supplied)
  const r1 = await call('POST', `/v1/endpoints/${e1.json.id}/secret/rotate`, {})
  const rotatedTo = `whsec_${randomBytes(32).toString('base64')}`
  const r2 = await call('POST', `/v1/endpoints/${e2.json.id}/secret/rotate`, { secret: rotatedTo, grace_seconds: 0 })
  expect([r1.status, r2.status]).toEqual([200, 200])
  secrets.push(r1.json.secret, rotatedTo)
  expect((await call('GET', `/v1/endpoints/${e1.json.id}/secret`)).json.secret).toBe(r1.json.secret)
  // Bad secrets are refused without being echoed back.
  const badSecret = `whsec_${randomBytes(8).toString('base64')}`
  secrets.push(badSecret)
  see(await call('POST', '/v1/endpoints', { url: receiverUrl, secret: badSecret }))
  see(await call('POST', '/v1/endpoints', { url: receiverUrl, secret: 'short-' + randomBytes(2).toString('hex'), signature: 'hmac-sha256' }))
  see(await call('POST', `/v1/endpoints/${e1.json.id}/secret/rotate`, { secret: badSecret }))

  // Keys: create, use, revoke, use again.
  const pub = await call('POST', '/v1/keys', { name: 'pub', role: 'publisher' })
  const viewer = await call('POST', '/v1/keys', { name: 'viewer', role: 'viewer' })
  expect([pub.status, viewer.status]).toEqual([201, 201])
  secrets.push(pub.json.key, viewer.json.key)
  expect((await as(pub.json.key)('POST', '/v1/events', { type: 'secret.test', data: { hello: 'world' } })).status).toBe(202)
  see(await as(pub.json.key)('GET', '/v1/endpoints'))
  see(await as(viewer.json.key)('GET', `/v1/endpoints/${e1.json.id}/secret`))
  see(await as(viewer.json.key)('POST', '/v1/keys', { name: 'x', role: 'admin' }))
  expect((await call('DELETE', `/v1/keys/${viewer.json.id}`)).status).toBe(200)
  see(await as(viewer.json.key)('GET', '/v1/endpoints'))
  // Failed authentication of every shape.
  const wrong = `pbk_${randomBytes(32).toString('base64url')}`
  secrets.push(wrong)
  for (const k of [wrong, adminKey + 'x', adminKey.slice(0, -1), `Basic ${adminKey}`]) see(await as(k)('GET', '/v1/keys'))
  see(await call('GET', `/v1/keys/${encodeURIComponent(adminKey)}`))
  see(await call('DELETE', `/v1/keys/${encodeURIComponent(pub.json.key)}`))

  // User tokens: issue, use in the header and in ?token= (EventSource style), and a forged one.
  expect([200, 201]).toContain((await call('PUT', '/v1/users/u_secret', { email: 'u@example.com', name: 'U' })).status)
  const tok = await call('POST', '/v1/users/u_secret/tokens', { ttl_seconds: 600 })
  expect(tok.status, tok.text).toBe(201)
  secrets.push(tok.json.token, tokenKey())
  expect((await as(tok.json.token)('GET', '/v1/inbox')).status).toBe(200)
  // ?token= is read on the stream only; elsewhere it is refused (and still never logged).
  expect((await call('GET', `/v1/inbox?token=${encodeURIComponent(tok.json.token)}`, undefined, null)).status).toBe(401)
  const forged = tok.json.token.slice(0, -4) + 'AAAA'
  secrets.push(forged)
  see(await as(forged)('GET', '/v1/inbox'))
  see(await call('GET', `/v1/inbox/unread-count?token=${encodeURIComponent(forged)}`, undefined, null))
  see(await as(tok.json.token)('GET', '/v1/endpoints'))
  see(await call('POST', '/v1/notifications', { topic: 'secret.topic', recipients: ['user:u_secret'], title: 'hello' }))

  // Everything a viewer or admin can list or get, after deliveries have happened.
  for (let i = 0; i < 250; i++) {
    const done = (await call('GET', '/v1/deliveries?status=success')).json?.data ?? []
    if (done.length > 0) break
    await new Promise((r) => setTimeout(r, 20))
  }
  for (const path of ['/v1/endpoints', `/v1/endpoints/${e1.json.id}`, `/v1/endpoints/${e2.json.id}`, `/v1/endpoints/${e3.json.id}`,
    '/v1/keys', '/v1/deliveries', '/openapi.json', '/metrics', '/v1/users/u_secret']) {
    const r = see(await call('GET', path))
    expect(r.status, path).toBe(200)
  }
  const dl = (await call('GET', '/v1/deliveries')).json.data as { id: string; event_id: string | null }[]
  expect(dl.length).toBeGreaterThan(0)
  for (const d of dl) see(await call('GET', `/v1/deliveries/${d.id}`))
  for (const d of dl) if (d.event_id) see(await call('GET', `/v1/events/${d.event_id}`))
  const keys = (await call('GET', '/v1/keys')).json.data as Record<string, unknown>[]
  for (const k of keys) expect(Object.keys(k)).not.toContain('hash')
  expect(visible.filter((v) => /^[45]/.test(v)).length).toBeGreaterThan(10)
  return { secrets, visible }
}

describe('secrets stay secret', () => {
  it('never appear in the server log, list or get responses, or error messages', async () => {
    const adminKey = newAdminKey()
    const t = tempDir('postbox-secrets-')
    cleanups.push(t.cleanup)
    const receiver = await startRecordingReceiver()
    cleanups.push(() => receiver.close())
    const server = await startServer(serverEnv(t.dir, adminKey, { POSTBOX_LOG_LEVEL: 'debug', POSTBOX_RETRY_SCHEDULE: '100ms' }))
    const call = Object.assign(apiClient(() => server.baseUrl, adminKey), { key: adminKey })
    const { secrets, visible } = await scenario(call, receiver.url, () => readFileSync(join(t.dir, 'token-secret.txt'), 'utf8').trim())
    expect(receiver.requests).toBeGreaterThan(0)
    expect(visible.flatMap((v) => leaks(v, secrets))).toEqual([])
    expect(await server.stop()).toBe(0)
    const log = server.output()
    expect(log).toContain('listening')
    expect(leaks(log, secrets)).toEqual([])
    // The database holds signing secrets in clear: it must not be readable by other users.
    for (const f of ['postbox.db', 'token-secret.txt']) expect(statSync(join(t.dir, f)).mode & 0o077, f).toBe(0)
  }, 60_000)

  it('never appear in the library logger output (trace level)', async () => {
    let captured = ''
    const log = createLogger('trace', { write: (s: string) => void (captured += s) })
    const receiver = await startRecordingReceiver()
    cleanups.push(() => receiver.close())
    const f = await apiFixture({ log, retrySchedule: [100] })
    cleanups.push(() => f.close())
    f.pb.start()
    const call = Object.assign(
      (async (method, path, body, auth) => {
        const res = await f.call(method, path, { body, key: auth === undefined ? f.keys.admin : auth })
        const text = await res.text()
        let json: any = null
        try {
          json = JSON.parse(text)
        } catch {}
        return { status: res.status, json, text }
      }) as Call,
      { key: f.keys.admin },
    )
    const { secrets, visible } = await scenario(call, receiver.url, () => readFileSync(join(f.dir, 'token-secret.txt'), 'utf8').trim())
    secrets.push(f.keys.publisher, f.keys.viewer)
    expect(visible.flatMap((v) => leaks(v, secrets))).toEqual([])
    await f.pb.close()
    expect(captured.length).toBeGreaterThan(0)
    expect(leaks(captured, secrets)).toEqual([])
  }, 30_000)

  it('a generated first admin key goes to a 0600 file and the log names only the path', async () => {
    const t = tempDir('postbox-secrets-')
    cleanups.push(t.cleanup)
    const env = serverEnv(t.dir, '')
    delete env.POSTBOX_ADMIN_KEY
    const server = await startServer(env)
    const file = join(t.dir, 'admin-key.txt')
    const key = readFileSync(file, 'utf8').trim()
    expect(key).toMatch(/^pbk_[A-Za-z0-9_-]{43}$/)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(statSync(join(t.dir, 'token-secret.txt')).mode & 0o777).toBe(0o600)
    expect((await apiClient(() => server.baseUrl, key)('GET', '/v1/keys')).status).toBe(200)
    expect(await server.stop()).toBe(0)
    expect(server.output()).toContain(file)
    expect(leaks(server.output(), [key])).toEqual([])
    // Loosened by hand: the next start narrows both again.
    for (const f of [file, join(t.dir, 'token-secret.txt')]) chmodSync(f, 0o644)
    const again = await startServer(env)
    expect(await again.stop()).toBe(0)
    for (const f of [file, join(t.dir, 'token-secret.txt')]) expect(statSync(f).mode & 0o777).toBe(0o600)
  }, 30_000)
})
