import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../src/config.js'
import { silentLogger } from '../src/log.js'
import { resolveConfig } from '../src/postbox.js'
import { listen, type RunningServer } from '../src/server.js'
import { apiFixture, type ApiFixture } from './support/api.js'

/**
 * POSTBOX_CORS_ORIGINS: a browser front end on another origin may call /v1 (inbox with a user
 * token, SSE with ?token=). Unset means no CORS headers at all; an origin not on the list gets
 * none either, and its request behaves as if CORS were off.
 */

const APP = 'https://app.example.com'
const PREFLIGHT = { origin: APP, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' }
const CORS_HEADERS = ['access-control-allow-origin', 'access-control-allow-methods', 'access-control-allow-headers', 'access-control-max-age', 'access-control-allow-credentials']

const corsHeadersOf = (res: Response): Record<string, string> =>
  Object.fromEntries(CORS_HEADERS.flatMap((h) => (res.headers.has(h) ? [[h, res.headers.get(h)!]] : [])))

describe('CORS with POSTBOX_CORS_ORIGINS set', () => {
  let f: ApiFixture
  let userToken: string
  beforeAll(async () => {
    // Upper case and a trailing slash are normalised to the origin a browser sends.
    f = await apiFixture({ corsOrigins: ['https://App.Example.com/', 'http://localhost:5173'] })
    userToken = (await f.json('POST', '/v1/users/u_1/tokens', { body: {} })).body.token
  })
  afterAll(async () => f?.close())

  it('answers a preflight from an allowed origin with 204 and the documented headers, before auth', async () => {
    for (const path of ['/v1/inbox', '/v1/inbox/read', '/v1/endpoints/ep_x']) {
      const res = await f.call('OPTIONS', path, { key: null, headers: PREFLIGHT })
      expect(res.status, path).toBe(204)
      expect(corsHeadersOf(res)).toEqual({
        'access-control-allow-origin': APP,
        'access-control-allow-methods': 'GET,POST,PUT,PATCH,DELETE',
        'access-control-allow-headers': 'authorization,content-type,last-event-id,idempotency-key',
        'access-control-max-age': '600',
      })
      expect(res.headers.get('vary')).toMatch(/origin/i)
      expect(await res.text()).toBe('')
    }
  })

  it('a preflight from another origin gets no CORS headers and is answered as without CORS', async () => {
    for (const origin of ['https://evil.example.com', 'https://app.example.com.evil.net', 'http://app.example.com', 'null']) {
      // Like any request without credentials: the inbox checks its user token first.
      const res = await f.call('OPTIONS', '/v1/inbox', { key: null, headers: { ...PREFLIGHT, origin } })
      expect(res.status, origin).toBe(401)
      expect(corsHeadersOf(res), origin).toEqual({})
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized')
    }
    const noOrigin = await f.call('OPTIONS', '/v1/endpoints', { key: null })
    expect(noOrigin.status).toBe(401)
    expect(corsHeadersOf(noOrigin)).toEqual({})
  })

  it('an actual request from an allowed origin carries Allow-Origin, also on errors; another origin gets none', async () => {
    const ok = await f.call('GET', '/v1/inbox', { key: null, headers: { origin: APP, authorization: `Bearer ${userToken}` } })
    expect(ok.status).toBe(200)
    expect(corsHeadersOf(ok)).toEqual({ 'access-control-allow-origin': APP })
    expect(ok.headers.get('vary')).toMatch(/origin/i)
    const other = await f.call('GET', '/v1/inbox', { key: null, headers: { origin: 'http://localhost:5173', authorization: `Bearer ${userToken}` } })
    expect(corsHeadersOf(other)).toEqual({ 'access-control-allow-origin': 'http://localhost:5173' })
    // The browser must be able to read a 401 or 400 to show it.
    const denied = await f.call('GET', '/v1/inbox', { key: null, headers: { origin: APP, authorization: 'Bearer pbu_bad.token' } })
    expect(denied.status).toBe(401)
    expect(corsHeadersOf(denied)).toEqual({ 'access-control-allow-origin': APP })
    const invalid = await f.call('POST', '/v1/inbox/read', { key: null, headers: { origin: APP, authorization: `Bearer ${userToken}` }, body: { ids: 'x' } })
    expect(invalid.status).toBe(400)
    expect(corsHeadersOf(invalid)).toEqual({ 'access-control-allow-origin': APP })

    const foreign = await f.call('GET', '/v1/inbox', { key: null, headers: { origin: 'https://evil.example.com', authorization: `Bearer ${userToken}` } })
    expect(foreign.status).toBe(200)
    expect(corsHeadersOf(foreign)).toEqual({})
  })

  it('only /v1 is CORS-enabled', async () => {
    const res = await f.call('GET', '/healthz', { key: null, headers: { origin: APP } })
    expect(res.status).toBe(200)
    expect(corsHeadersOf(res)).toEqual({})
  })
})

describe('CORS with * ', () => {
  let f: ApiFixture
  beforeAll(async () => {
    f = await apiFixture({ corsOrigins: ['*'] })
  })
  afterAll(async () => f?.close())

  it('allows any origin with Allow-Origin: * and never Allow-Credentials', async () => {
    const pre = await f.call('OPTIONS', '/v1/events', { key: null, headers: { ...PREFLIGHT, origin: 'https://anything.test' } })
    expect(pre.status).toBe(204)
    expect(corsHeadersOf(pre)).toMatchObject({ 'access-control-allow-origin': '*', 'access-control-max-age': '600' })
    const res = await f.call('GET', '/v1/keys', { headers: { origin: 'https://anything.test' } })
    expect(res.status).toBe(200)
    expect(corsHeadersOf(res)).toEqual({ 'access-control-allow-origin': '*' })
  })
})

describe('CORS unset (the default)', () => {
  let f: ApiFixture
  beforeAll(async () => {
    f = await apiFixture()
  })
  afterAll(async () => f?.close())

  it('sends no CORS headers and does not answer preflights', async () => {
    expect(loadConfig({}).corsOrigins).toEqual([])
    const pre = await f.call('OPTIONS', '/v1/inbox', { key: null, headers: PREFLIGHT })
    expect(pre.status).toBe(401)
    expect(corsHeadersOf(pre)).toEqual({})
    const res = await f.call('GET', '/v1/keys', { headers: { origin: APP } })
    expect(res.status).toBe(200)
    expect(corsHeadersOf(res)).toEqual({})
  })
})

describe('CORS on the SSE stream (real server)', () => {
  let f: ApiFixture
  let server: RunningServer | null = null
  const aborts: AbortController[] = []
  afterEach(async () => {
    for (const a of aborts.splice(0)) a.abort()
    // server.close() also closes the Postbox; the fixture's close then only removes the directory.
    await server?.close()
    server = null
    await f?.close().catch(() => {})
  })

  it('the text/event-stream response carries Allow-Origin for an allowed origin, none for another', async () => {
    f = await apiFixture({ corsOrigins: [APP], port: 0 })
    server = await listen(f.pb, silentLogger())
    const token = (await f.json('POST', '/v1/users/u_1/tokens', { body: {} })).body.token as string
    const open = async (origin: string): Promise<Response> => {
      const ac = new AbortController()
      aborts.push(ac)
      return fetch(`http://127.0.0.1:${server!.port}/v1/inbox/stream?token=${token}`, { headers: { origin }, signal: ac.signal })
    }
    const allowed = await open(APP)
    expect(allowed.status).toBe(200)
    expect(allowed.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(allowed.headers.get('access-control-allow-origin')).toBe(APP)
    const foreign = await open('https://evil.example.com')
    expect(foreign.status).toBe(200)
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull()
  })
})

describe('POSTBOX_CORS_ORIGINS validation', () => {
  it.each(['app.example.com', 'https://app.example.com/inbox', 'https://app.example.com?x=1', 'https://*.example.com', 'ftp://files.example.com', 'https://user@app.example.com', 'null', '*.example.com'])(
    '%j is refused at start, naming the variable',
    (value) => {
      let err: unknown
      try {
        loadConfig({ POSTBOX_CORS_ORIGINS: `https://ok.example.com,${value}` })
      } catch (e) {
        err = e
      }
      expect(err).toBeInstanceOf(ConfigError)
      expect((err as ConfigError).variable).toBe('POSTBOX_CORS_ORIGINS')
      expect((err as Error).message).toContain(value)
    },
  )

  it('accepts exact origins and *, from the variable, the flag and library options', () => {
    expect(loadConfig({ POSTBOX_CORS_ORIGINS: ' https://App.example.com/ , http://localhost:5173,https://a.test:443' }).corsOrigins).toEqual([
      'https://app.example.com',
      'http://localhost:5173',
      'https://a.test',
    ])
    expect(loadConfig({}, ['--cors-origins', '*']).corsOrigins).toEqual(['*'])
    expect(() => resolveConfig({ corsOrigins: ['https://a.test/x'] })).toThrow(/^POSTBOX_CORS_ORIGINS:/)
  })
})
