import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../src/config.js'
import { silentLogger } from '../src/log.js'
import { resolveConfig } from '../src/postbox.js'
import { listen, type RunningServer } from '../src/server.js'
import { apiFixture, type ApiFixture } from './support/api.js'

/**
 * CORS has two lists (docs/inbox-element.md):
 * - the user-token routes (/v1/inbox…, the SSE stream included) serve the inbox element on the
 *   operator's own site: any origin by default, only POSTBOX_INBOX_ORIGINS when that is set;
 * - every other /v1 route sends CORS headers only to an origin of POSTBOX_CORS_ORIGINS.
 * An origin not allowed gets no CORS headers, and its request behaves as if CORS were off.
 */

const APP = 'https://app.example.com'
const EVIL = 'https://evil.example.com'
const PREFLIGHT = { origin: APP, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' }
const CORS_HEADERS = ['access-control-allow-origin', 'access-control-allow-methods', 'access-control-allow-headers', 'access-control-max-age', 'access-control-allow-credentials']
const PREFLIGHT_HEADERS = {
  'access-control-allow-methods': 'GET,POST,PUT,PATCH,DELETE',
  'access-control-allow-headers': 'authorization,content-type,last-event-id,idempotency-key',
  'access-control-max-age': '600',
}
const INBOX_PATHS = ['/v1/inbox', '/v1/inbox/read', '/v1/inbox/read-all', '/v1/inbox/unread-count', '/v1/inbox/stream']

const corsHeadersOf = (res: Response): Record<string, string> =>
  Object.fromEntries(CORS_HEADERS.flatMap((h) => (res.headers.has(h) ? [[h, res.headers.get(h)!]] : [])))

const errorCode = async (res: Response): Promise<string> => ((await res.json()) as { error: { code: string } }).error.code

describe('API-key routes with POSTBOX_CORS_ORIGINS set', () => {
  let f: ApiFixture
  beforeAll(async () => {
    // Upper case and a trailing slash are normalised to the origin a browser sends.
    f = await apiFixture({ corsOrigins: ['https://App.Example.com/', 'http://localhost:5173'] })
  })
  afterAll(async () => f?.close())

  it('answers a preflight from an allowed origin with 204 and the documented headers, before auth', async () => {
    for (const path of ['/v1/endpoints/ep_x', '/v1/keys', '/v1/events']) {
      const res = await f.call('OPTIONS', path, { key: null, headers: PREFLIGHT })
      expect(res.status, path).toBe(204)
      expect(corsHeadersOf(res)).toEqual({ 'access-control-allow-origin': APP, ...PREFLIGHT_HEADERS })
      expect(res.headers.get('vary')).toMatch(/origin/i)
      expect(await res.text()).toBe('')
    }
  })

  it('a preflight from another origin gets no CORS headers and is answered as without CORS', async () => {
    for (const origin of [EVIL, 'https://app.example.com.evil.net', 'http://app.example.com', 'null']) {
      const res = await f.call('OPTIONS', '/v1/endpoints', { key: null, headers: { ...PREFLIGHT, origin } })
      expect(res.status, origin).toBe(401)
      expect(corsHeadersOf(res), origin).toEqual({})
      expect(await errorCode(res)).toBe('unauthorized')
    }
    const noOrigin = await f.call('OPTIONS', '/v1/endpoints', { key: null })
    expect(noOrigin.status).toBe(401)
    expect(corsHeadersOf(noOrigin)).toEqual({})
  })

  it('an actual request from an allowed origin carries Allow-Origin, also on errors; another origin gets none', async () => {
    const ok = await f.call('GET', '/v1/keys', { headers: { origin: APP } })
    expect(ok.status).toBe(200)
    expect(corsHeadersOf(ok)).toEqual({ 'access-control-allow-origin': APP })
    expect(ok.headers.get('vary')).toMatch(/origin/i)
    const other = await f.call('GET', '/v1/keys', { headers: { origin: 'http://localhost:5173' } })
    expect(corsHeadersOf(other)).toEqual({ 'access-control-allow-origin': 'http://localhost:5173' })
    // The browser must be able to read a 401 or 400 to show it.
    const denied = await f.call('GET', '/v1/keys', { key: 'pbk_wrong', headers: { origin: APP } })
    expect(denied.status).toBe(401)
    expect(corsHeadersOf(denied)).toEqual({ 'access-control-allow-origin': APP })
    const invalid = await f.call('POST', '/v1/keys', { headers: { origin: APP }, body: { name: 1 } })
    expect(invalid.status).toBe(400)
    expect(corsHeadersOf(invalid)).toEqual({ 'access-control-allow-origin': APP })

    const foreign = await f.call('GET', '/v1/keys', { headers: { origin: EVIL } })
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

describe('both lists unset (the default)', () => {
  let f: ApiFixture
  let userToken: string
  beforeAll(async () => {
    f = await apiFixture()
    userToken = (await f.json('POST', '/v1/users/u_1/tokens', { body: {} })).body.token
  })
  afterAll(async () => f?.close())

  it('API-key routes send no CORS headers and do not answer preflights', async () => {
    expect(loadConfig({}).corsOrigins).toEqual([])
    const pre = await f.call('OPTIONS', '/v1/endpoints', { key: null, headers: PREFLIGHT })
    expect(pre.status).toBe(401)
    expect(corsHeadersOf(pre)).toEqual({})
    for (const path of ['/v1/keys', '/v1/endpoints', '/v1/templates']) {
      const res = await f.call('GET', path, { headers: { origin: APP } })
      expect(res.status, path).toBe(200)
      expect(corsHeadersOf(res), path).toEqual({})
    }
  })

  it('the user-token routes answer a preflight from any origin with Allow-Origin: *', async () => {
    expect(loadConfig({}).inboxOrigins).toEqual([])
    for (const origin of [APP, EVIL, 'http://127.0.0.1:5555']) {
      for (const path of INBOX_PATHS) {
        const res = await f.call('OPTIONS', path, { key: null, headers: { ...PREFLIGHT, origin } })
        expect(res.status, `${origin} ${path}`).toBe(204)
        expect(corsHeadersOf(res)).toEqual({ 'access-control-allow-origin': '*', ...PREFLIGHT_HEADERS })
      }
    }
  })

  it('their answers, errors included, are readable from any origin; never Allow-Credentials', async () => {
    const ok = await f.call('GET', '/v1/inbox', { key: null, headers: { origin: EVIL, authorization: `Bearer ${userToken}` } })
    expect(ok.status).toBe(200)
    expect(corsHeadersOf(ok)).toEqual({ 'access-control-allow-origin': '*' })
    const denied = await f.call('GET', '/v1/inbox/unread-count', { key: null, headers: { origin: APP, authorization: 'Bearer pbu_bad.token' } })
    expect(denied.status).toBe(401)
    expect(corsHeadersOf(denied)).toEqual({ 'access-control-allow-origin': '*' })
    expect(await errorCode(denied)).toBe('invalid_token')
    const invalid = await f.call('POST', '/v1/inbox/read', { key: null, headers: { origin: APP, authorization: `Bearer ${userToken}` }, body: { ids: 'x' } })
    expect(invalid.status).toBe(400)
    expect(corsHeadersOf(invalid)).toEqual({ 'access-control-allow-origin': '*' })
  })

  it('a path that only starts like the inbox is not a user-token route', async () => {
    const res = await f.call('OPTIONS', '/v1/inboxes', { key: null, headers: PREFLIGHT })
    expect(res.status).toBe(401)
    expect(corsHeadersOf(res)).toEqual({})
  })
})

describe('POSTBOX_INBOX_ORIGINS set', () => {
  let f: ApiFixture
  let userToken: string
  beforeAll(async () => {
    // POSTBOX_CORS_ORIGINS lists another origin: it opens the API-key routes only.
    f = await apiFixture({ inboxOrigins: ['https://APP.example.com:443/'], corsOrigins: ['http://localhost:5173'] })
    userToken = (await f.json('POST', '/v1/users/u_1/tokens', { body: {} })).body.token
  })
  afterAll(async () => f?.close())

  it('answers the listed origin only, with that origin and Vary: Origin', async () => {
    for (const path of INBOX_PATHS) {
      const res = await f.call('OPTIONS', path, { key: null, headers: PREFLIGHT })
      expect(res.status, path).toBe(204)
      expect(corsHeadersOf(res)).toEqual({ 'access-control-allow-origin': APP, ...PREFLIGHT_HEADERS })
      expect(res.headers.get('vary')).toMatch(/origin/i)
    }
    const ok = await f.call('GET', '/v1/inbox', { key: null, headers: { origin: APP, authorization: `Bearer ${userToken}` } })
    expect(ok.status).toBe(200)
    expect(corsHeadersOf(ok)).toEqual({ 'access-control-allow-origin': APP })
  })

  it('another origin (even one of POSTBOX_CORS_ORIGINS) gets no CORS headers on the inbox', async () => {
    for (const origin of [EVIL, 'http://localhost:5173', 'http://app.example.com']) {
      const pre = await f.call('OPTIONS', '/v1/inbox', { key: null, headers: { ...PREFLIGHT, origin } })
      expect(pre.status, origin).toBe(401)
      expect(corsHeadersOf(pre), origin).toEqual({})
      const res = await f.call('GET', '/v1/inbox', { key: null, headers: { origin, authorization: `Bearer ${userToken}` } })
      expect(res.status).toBe(200)
      expect(corsHeadersOf(res), origin).toEqual({})
    }
  })

  it('does not open the API-key routes to the inbox origin', async () => {
    const pre = await f.call('OPTIONS', '/v1/keys', { key: null, headers: PREFLIGHT })
    expect(pre.status).toBe(401)
    expect(corsHeadersOf(pre)).toEqual({})
    const api = await f.call('GET', '/v1/keys', { headers: { origin: 'http://localhost:5173' } })
    expect(corsHeadersOf(api)).toEqual({ 'access-control-allow-origin': 'http://localhost:5173' })
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

  const opener = async (opts: Parameters<typeof apiFixture>[0]) => {
    f = await apiFixture({ ...opts, port: 0 })
    server = await listen(f.pb, silentLogger())
    const token = (await f.json('POST', '/v1/users/u_1/tokens', { body: {} })).body.token as string
    return async (origin: string): Promise<Response> => {
      const ac = new AbortController()
      aborts.push(ac)
      return fetch(`http://127.0.0.1:${server!.port}/v1/inbox/stream`, { headers: { origin, authorization: `Bearer ${token}` }, signal: ac.signal })
    }
  }

  it('by default the text/event-stream response is readable from any origin', async () => {
    const open = await opener({})
    const res = await open(EVIL)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
  })

  it('with POSTBOX_INBOX_ORIGINS: Allow-Origin for a listed origin, none for another', async () => {
    const open = await opener({ inboxOrigins: [APP] })
    const allowed = await open(APP)
    expect(allowed.status).toBe(200)
    expect(allowed.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(allowed.headers.get('access-control-allow-origin')).toBe(APP)
    const foreign = await open(EVIL)
    expect(foreign.status).toBe(200)
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull()
  })
})

describe.each([
  ['POSTBOX_CORS_ORIGINS', '--cors-origins', 'corsOrigins'],
  ['POSTBOX_INBOX_ORIGINS', '--inbox-origins', 'inboxOrigins'],
] as const)('%s validation', (variable, flag, option) => {
  it.each(['app.example.com', 'https://app.example.com/inbox', 'https://app.example.com?x=1', 'https://*.example.com', 'ftp://files.example.com', 'https://user@app.example.com', 'null', '*.example.com'])(
    '%j is refused at start, naming the variable',
    (value) => {
      let err: unknown
      try {
        loadConfig({ [variable]: `https://ok.example.com,${value}` })
      } catch (e) {
        err = e
      }
      expect(err).toBeInstanceOf(ConfigError)
      expect((err as ConfigError).variable).toBe(variable)
      expect((err as Error).message).toContain(value)
    },
  )

  it('accepts exact origins and *, from the variable, the flag and library options', async () => {
    expect(loadConfig({ [variable]: ' https://App.example.com/ , http://localhost:5173,https://a.test:443' })[option]).toEqual([
      'https://app.example.com',
      'http://localhost:5173',
      'https://a.test',
    ])
    expect(loadConfig({}, [flag, '*'])[option]).toEqual(['*'])
    expect(() => resolveConfig({ [option]: ['https://a.test/x'] })).toThrow(new RegExp(`^${variable}:`))
  })
})
