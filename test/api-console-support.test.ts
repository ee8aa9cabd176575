import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config.js'
import { apiFixture, type ApiFixture } from './support/api.js'
import { tempDir } from './helpers.js'

/** The console's supporting routes: stats, the attempt timeseries, template preview, the key's own role, and the pages. */
describe('console support API', () => {
  let f: ApiFixture
  afterEach(async () => f?.close())

  // On a minute boundary after every delivery the tests create is due (they are due at once).
  const T0 = Math.ceil(Date.now() / 60_000) * 60_000 + 60_000

  /** Claims every due delivery at `at` and settles each with `outcome`, logging an attempt of `ms`. */
  const attemptAll = async (at: number, outcome: 'success' | 'retry' | 'dead', ms: number): Promise<number> => {
    const claimed = await f.pb.store.deliveries.claimDue({ limit: 100, now: at, defaultTimeoutMs: 15_000 })
    await f.pb.store.deliveries.settle(
      claimed.map((c) => ({
        id: c.id,
        claimToken: c.claimToken,
        outcome: outcome === 'retry' ? { kind: 'retry' as const, at } : { kind: outcome },
        attempt: { startedAt: at, durationMs: ms, statusCode: outcome === 'success' ? 200 : 500 },
      })),
      at + ms,
    )
    return claimed.length
  }

  it('GET /v1/stats: queue depth by status, oldest pending and endpoint health (viewer; not publisher)', async () => {
    f = await apiFixture()
    const ep = await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/a' } })
    await f.json('POST', '/v1/events', { body: { type: 'a', data: {} } })
    await f.json('POST', '/v1/events', { body: { type: 'a', data: {} } })
    const res = await f.json('GET', '/v1/stats', { key: f.keys.viewer })
    expect(res.status).toBe(200)
    expect(res.body.deliveries).toEqual({ pending: 2, in_flight: 0, success: 0, dead: 0, cancelled: 0 })
    expect(res.body.oldest_pending_age_seconds).toBeGreaterThanOrEqual(0)
    expect(typeof res.body.oldest_pending_at).toBe('string')
    expect(res.body.endpoints).toEqual([expect.objectContaining({ id: ep.body.id, circuit: 'closed', pending: 2, failing: false })])
    expect(res.body.failing_endpoints).toBe(0)
    expect((await f.json('GET', '/v1/stats', { key: f.keys.publisher })).status).toBe(403)
    expect((await f.json('GET', '/v1/stats', { key: null })).status).toBe(401)
  })

  it('GET /v1/stats/timeseries: attempts per bucket by outcome from the attempt log, every bucket listed', async () => {
    f = await apiFixture()
    const a = await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/a' } })
    await f.json('POST', '/v1/events', { body: { type: 'x', data: {} } })
    await f.json('POST', '/v1/events', { body: { type: 'x', data: {} } })
    // Minute 0: two failures, retried; minute 2: both succeed.
    expect(await attemptAll(T0 + 5_000, 'retry', 100)).toBe(2)
    expect(await attemptAll(T0 + 120_000, 'success', 50)).toBe(2)
    const since = new Date(T0).toISOString()
    const until = new Date(T0 + 4 * 60_000).toISOString()
    const res = await f.json('GET', `/v1/stats/timeseries?since=${since}&until=${until}&bucket=1m`, { key: f.keys.viewer })
    expect(res.status).toBe(200)
    expect(res.body.bucket_seconds).toBe(60)
    expect(res.body.data.map((b: { start: string }) => b.start)).toEqual([0, 1, 2, 3].map((m) => new Date(T0 + m * 60_000).toISOString()))
    expect(res.body.data[0]).toMatchObject({ retry: 2, success: 0, dead: 0, attempts: 2, avg_duration_ms: 100 })
    expect(res.body.data[1]).toMatchObject({ attempts: 0, avg_duration_ms: null })
    expect(res.body.data[2]).toMatchObject({ success: 2, attempts: 2, avg_duration_ms: 50 })
    expect(res.body.totals).toEqual({ success: 2, retry: 2, dead: 0, snooze: 0, attempts: 4, avg_duration_ms: 75 })

    // One endpoint's attempts only; another endpoint has none; an unknown one is 404.
    const b = await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/b', event_types: ['other'] } })
    const of = async (id: string) => (await f.json('GET', `/v1/stats/timeseries?since=${since}&until=${until}&endpoint_id=${id}`)).body.totals.attempts
    expect(await of(a.body.id)).toBe(4)
    expect(await of(b.body.id)).toBe(0)
    expect((await f.json('GET', `/v1/stats/timeseries?endpoint_id=ep_nope`)).status).toBe(404)
    // A since that is not on a bucket boundary is rounded down to one.
    const odd = await f.json('GET', `/v1/stats/timeseries?since=${new Date(T0 + 30_000).toISOString()}&until=${until}&bucket=1m`)
    expect(odd.body.since).toBe(since)
  })

  it('GET /v1/stats/timeseries refuses bad buckets and ranges with 400 validation_failed', async () => {
    f = await apiFixture()
    for (const q of ['bucket=0', 'bucket=banana', 'bucket=500ms', 'bucket=1s', 'since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z', 'since=yesterday', 'unknown=1']) {
      const res = await f.json('GET', `/v1/stats/timeseries?${q}`)
      if (q === 'unknown=1') continue // the house rule for unknown parameters decides this one
      expect(res, q).toMatchObject({ status: 400, body: { error: { code: 'validation_failed' } } })
    }
  })

  it('POST /v1/templates/preview renders the active template, a draft, the recipient and the payload, without sending', async () => {
    f = await apiFixture()
    await f.json('PUT', '/v1/users/u_1', { body: { name: 'Ada', email: 'ada@example.com', locale: 'fr' } })
    await f.json('PUT', '/v1/templates', { body: { topic: 'invoice.paid', channel: 'email', locale: 'fr', subject: 'Facture {{ payload.n }}', body: 'Merci **{{ recipient.name }}**', format: 'markdown' } })
    const stored = await f.json('POST', '/v1/templates/preview', { key: f.keys.viewer, body: { topic: 'invoice.paid', channel: 'email', user_id: 'u_1', data: { n: 7 } } })
    expect(stored.status).toBe(200)
    expect(stored.body).toMatchObject({ title: 'Facture 7', body: 'Merci **Ada**', format: 'markdown', error: null, template: { version: 1, locale: 'fr' } })
    expect(stored.body.html).toContain('<strong>Ada</strong>')
    expect(stored.body.text).toContain('Merci Ada')

    const draft = await f.json('POST', '/v1/templates/preview', {
      body: { topic: 'invoice.paid', channel: 'inbox', data: { n: 8 }, template: { subject: 'Paid {{ payload.n }}', body: '<b>{{ payload.n }}</b>', format: 'html' } },
    })
    expect(draft.body).toMatchObject({ title: 'Paid 8', body: '<b>8</b>', template: null })
    // No template for the channel: the fallback, the request's own title and body.
    const none = await f.json('POST', '/v1/templates/preview', { body: { topic: 'other', channel: 'inbox', title: 'Hi', body: 'there' } })
    expect(none.body).toMatchObject({ title: 'Hi', body: 'there', format: 'text', template: null })
    // Nothing was sent or stored.
    expect(Object.values(await f.pb.store.deliveries.countByStatus()).every((n) => n === 0)).toBe(true)

    const bad = await f.json('POST', '/v1/templates/preview', { body: { topic: 'x', channel: 'inbox', template: { body: '{% if %}' } } })
    expect(bad).toMatchObject({ status: 400, body: { error: { code: 'validation_failed', details: [expect.objectContaining({ field: 'template.body' })] } } })
    expect((await f.json('POST', '/v1/templates/preview', { body: { topic: 'x', channel: 'inbox', user_id: 'nobody' } })).status).toBe(404)
    expect((await f.json('POST', '/v1/templates/preview', { body: { topic: 'x', channel: 'fax' } })).status).toBe(400)
    expect((await f.json('POST', '/v1/templates/preview', { key: f.keys.publisher, body: { topic: 'x', channel: 'inbox' } })).status).toBe(403)
  })

  it('GET /v1/keys/self tells every key its own role, and a wrong key is 401', async () => {
    f = await apiFixture()
    for (const role of ['admin', 'publisher', 'viewer'] as const) {
      const res = await f.json('GET', '/v1/keys/self', { key: f.keys[role] })
      expect(res.status).toBe(200)
      expect(res.body.role).toBe(role)
      expect(res.body).not.toHaveProperty('key')
      expect(res.body).not.toHaveProperty('hash')
    }
    expect((await f.json('GET', '/v1/keys/self', { key: 'pbk_' + 'z'.repeat(43) })).body.error.code).toBe('invalid_token')
  })
})

describe('console and portal pages', () => {
  let f: ApiFixture
  let cleanup: (() => void) | undefined
  afterEach(async () => {
    await f?.close()
    cleanup?.()
  })

  /** A fake build: two pages and one asset. */
  const fakeBuild = (): string => {
    const t = tempDir('postbox-web-')
    cleanup = t.cleanup
    mkdirSync(join(t.dir, 'assets'))
    writeFileSync(join(t.dir, 'console.html'), '<!doctype html><script type="module" src="/assets/app-abc123.js"></script>')
    writeFileSync(join(t.dir, 'portal.html'), '<!doctype html><title>portal</title>')
    writeFileSync(join(t.dir, 'assets', 'app-abc123.js'), 'export const x = 1;\n'.repeat(200))
    return t.dir
  }

  it('pages are no-cache with a CSP, assets immutable and gzipped on request, / goes to the console', async () => {
    const dir = fakeBuild()
    f = await apiFixture()
    const { createApp } = await import('../src/api/app.js')
    const app = createApp({ ...appDeps(f), webDir: dir })
    const page = await app.request('/console')
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(page.headers.get('cache-control')).toBe('no-cache')
    expect(page.headers.get('content-security-policy')).toBe("default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
    expect(page.headers.get('referrer-policy')).toBe('no-referrer')
    const portal = await app.request('/portal')
    expect(portal.headers.get('content-security-policy')).toContain("frame-ancestors 'self'")
    const asset = await app.request('/assets/app-abc123.js', { headers: { 'accept-encoding': 'gzip, br' } })
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect(asset.headers.get('content-encoding')).toBe('gzip')
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    const plain = await app.request('/assets/app-abc123.js')
    expect(plain.headers.get('content-encoding')).toBeNull()
    expect(await plain.text()).toContain('export const x = 1;')
    expect((await app.request('/assets/missing.js')).status).toBe(404)
    expect((await app.request('/assets/..%2Fconsole.html')).status).toBeGreaterThanOrEqual(400)
    const root = await app.request('/')
    expect(root.status).toBe(302)
    expect(root.headers.get('location')).toBe('/console')
  })

  it('POSTBOX_PORTAL_ORIGINS lets those origins frame the portal; a bad origin fails at start', async () => {
    const dir = fakeBuild()
    f = await apiFixture({ portalOrigins: ['https://app.example.com'] })
    const { createApp } = await import('../src/api/app.js')
    const app = createApp({ ...appDeps(f), webDir: dir })
    expect((await app.request('/portal')).headers.get('content-security-policy')).toContain("frame-ancestors 'self' https://app.example.com")
    expect(loadConfig({ POSTBOX_PORTAL_ORIGINS: 'https://a.example.com/, https://b.example.com' }).portalOrigins).toEqual(['https://a.example.com', 'https://b.example.com'])
    expect(() => loadConfig({ POSTBOX_PORTAL_ORIGINS: 'https://a.example.com/path' })).toThrow(/POSTBOX_PORTAL_ORIGINS/)
  })

  it('an unbuilt checkout answers the pages with a 404 that says how to build them', async () => {
    f = await apiFixture()
    const { createApp } = await import('../src/api/app.js')
    const app = createApp({ ...appDeps(f), webDir: null })
    const res = await app.request('/console')
    expect(res.status).toBe(404)
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/npm run build/)
  })
})

/** The ApiDeps of a fixture's Postbox, to build a second app over the same store. */
function appDeps(f: ApiFixture) {
  const pb = f.pb as unknown as { store: unknown; config: unknown; log: unknown; clock: unknown; webhooks: unknown; notify?: unknown }
  return { store: pb.store, config: pb.config, log: pb.log, clock: pb.clock, webhooks: pb.webhooks, notify: pb.notify } as Parameters<typeof import('../src/api/app.js').createApp>[0]
}
