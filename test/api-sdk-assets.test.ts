import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync, gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenAPIHono } from '@hono/zod-openapi'
import { renderError } from '../src/api/app.js'
import type { ApiEnv } from '../src/api/deps.js'
import { sdkAssetRoutes } from '../src/api/sdk-assets.js'
import { silentLogger } from '../src/log.js'
import { tempDir } from './helpers.js'
import { apiFixture, type ApiFixture } from './support/api.js'
import { ensureSdkBuilt, INBOX_JS } from './support/sdk-build.js'

/** GET /sdk/inbox.js: the built element, its hashed copy and map, and the size budget. */

/** The inbox element's budget, gzipped (docs/inbox-element.md). */
const BUDGET_GZIP_BYTES = 30 * 1024

describe('the built inbox element', () => {
  let f: ApiFixture
  let script: Buffer
  beforeAll(async () => {
    await ensureSdkBuilt()
    script = readFileSync(INBOX_JS)
    f = await apiFixture()
  }, 120_000)
  afterAll(async () => f?.close())

  it(`fits the budget: at most ${BUDGET_GZIP_BYTES / 1024} KB gzipped`, async () => {
    const gz = gzipSync(script, { level: 9 }).length
    expect(gz).toBeLessThanOrEqual(BUDGET_GZIP_BYTES)
  })

  it('is one self-contained ES module that defines <postbox-inbox>', async () => {
    const text = script.toString('utf8')
    expect(text).toContain('postbox-inbox')
    expect(text).toMatch(/\bexport\s*\{/)
    // Bundled: no bare import left for the browser to resolve, and nothing fetched from elsewhere.
    expect(text).not.toMatch(/\bimport\s*[^(]*\bfrom\s*["'][^"'./]/)
    expect(text).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)[a-z]/i)
  })

  it('/sdk/inbox.js is served no-cache with an ETag, readable cross-origin, gzip when accepted', async () => {
    const res = await f.call('GET', '/sdk/inbox.js', { key: null, headers: { origin: 'https://app.example.com' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(res.headers.get('cache-control')).toBe('no-cache')
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(Buffer.from(await res.arrayBuffer()).equals(script)).toBe(true)
    const etag = res.headers.get('etag')!
    expect(etag).toMatch(/^"[0-9a-f]{10}"$/)

    const again = await f.call('GET', '/sdk/inbox.js', { key: null, headers: { 'if-none-match': etag } })
    expect(again.status).toBe(304)
    expect(await again.text()).toBe('')

    const gz = await f.call('GET', '/sdk/inbox.js', { key: null, headers: { 'accept-encoding': 'gzip, br' } })
    expect(gz.headers.get('content-encoding')).toBe('gzip')
    expect(gunzipSync(Buffer.from(await gz.arrayBuffer())).equals(script)).toBe(true)
  })

  it('the hashed copy is immutable; another hash, another name or a path is 404/400, never a file', async () => {
    const hash = JSON.parse((await f.call('GET', '/sdk/inbox.js', { key: null })).headers.get('etag')!) as string
    const res = await f.call('GET', `/sdk/inbox.${hash}.js`, { key: null })
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect(Buffer.from(await res.arrayBuffer()).equals(script)).toBe(true)

    const map = await f.call('GET', '/sdk/inbox.js.map', { key: null })
    expect(map.status).toBe(200)
    expect(JSON.parse(await map.text())).toMatchObject({ version: 3 })

    const stale = await f.json('GET', '/sdk/inbox.0123456789.js', { key: null })
    expect(stale).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } })
    for (const path of ['/sdk/other.js', '/sdk/inbox.JS', '/sdk/..%2Fpackage.json', '/sdk/inbox.js%00']) {
      const r = await f.json('GET', path, { key: null })
      expect([400, 404], path).toContain(r.status)
      expect(r.body.error.code, path).toMatch(/^(validation_failed|not_found)$/)
    }
  })
})

describe('an element that is not built', () => {
  it('answers 404 not_found saying how to build it', async () => {
    const empty = tempDir('postbox-no-sdk-')
    try {
      const app = new OpenAPIHono<ApiEnv>().route('/', sdkAssetRoutes(join(empty.dir, 'sdk')))
      app.onError((err, c) => renderError(err, c, { log: silentLogger() }))
      const res = await app.request('/sdk/inbox.js')
      expect(res.status).toBe(404)
      expect(await res.json()).toEqual({ error: { code: 'not_found', message: expect.stringContaining('npm run build') } })
    } finally {
      empty.cleanup()
    }
  })
})
