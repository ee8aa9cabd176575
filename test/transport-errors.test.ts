import { connect, createServer, type AddressInfo, type Server } from 'node:net'
import { gzipSync } from 'node:zlib'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { main } from '../src/cli.js'
import { ConfigError, loadConfig } from '../src/config.js'
import { silentLogger } from '../src/log.js'
import { listen, listenError, type RunningServer } from '../src/server.js'
import { tempDir } from './helpers.js'
import { ADMIN_KEY, apiFixture, type ApiFixture } from './support/api.js'

/**
 * Requests refused below the router (Node's HTTP parser) still get the documented error JSON,
 * compressed bodies get 415, and a server that cannot listen exits 2 naming the setting.
 */

interface RawAnswer {
  status: number
  headers: Record<string, string>
  body: string
  /** The server closed the connection. */
  closed: boolean
}

/** Writes `payload` on a fresh TCP connection and reads until the server closes it. */
function rawRequest(port: number, payload: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(payload))
    const chunks: Buffer[] = []
    socket.on('data', (d: Buffer) => chunks.push(d))
    socket.on('error', reject)
    socket.setTimeout(5_000, () => socket.destroy(new Error('no answer within 5 s')))
    socket.on('end', () => socket.end())
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      const [head = '', body = ''] = text.split('\r\n\r\n', 2)
      const [statusLine = '', ...lines] = head.split('\r\n')
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body, closed: true })
    })
  })
}

describe('transport-level rejections (real server)', () => {
  let f: ApiFixture
  let server: RunningServer
  let base: string
  beforeAll(async () => {
    f = await apiFixture({ port: 0 })
    server = await listen(f.pb, silentLogger())
    base = `http://127.0.0.1:${server.port}`
  })
  afterAll(async () => {
    await server?.close()
    await f?.close().catch(() => {})
  })

  it.each([
    ['a 60 KB URL', `GET /v1/events/${'a'.repeat(60_000)} HTTP/1.1\r\nHost: x\r\n\r\n`],
    ['a 60 KB header', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(60_000)}\r\n\r\n`],
    ['many headers summing to 40 KB', `GET /healthz HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 400 }, (_, i) => `X-H${i}: ${'c'.repeat(100)}\r\n`).join('')}\r\n`],
  ])('%s → 431 headers_too_large as error JSON, connection closed', async (_name, payload) => {
    const res = await rawRequest(server.port, payload)
    expect(res.status).toBe(431)
    expect(res.headers['content-type']).toBe('application/json')
    expect(res.headers.connection).toBe('close')
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.body))
    const body = JSON.parse(res.body)
    expect(body).toEqual({ error: { code: 'headers_too_large', message: expect.stringMatching(/exceed \d+ bytes/) } })
    expect(res.closed).toBe(true)
  })

  it.each([
    ['a malformed request line', 'BLAH\r\n\r\n'],
    ['an invalid header name', 'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n'],
    ['a bad chunk size', 'POST /v1/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'],
    ['both Content-Length and chunked', 'POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
  ])('%s → 400 bad_request as error JSON, connection closed', async (_name, payload) => {
    const res = await rawRequest(server.port, payload)
    expect(res.status).toBe(400)
    expect(res.headers['content-type']).toBe('application/json')
    expect(JSON.parse(res.body)).toEqual({ error: { code: 'bad_request', message: 'Malformed HTTP request' } })
  })

  it('a pipelined valid request before a malformed one is answered first, then the 400', async () => {
    const res = await rawRequest(server.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    expect(res.status).toBe(200)
    const both = await new Promise<string>((resolve, reject) => {
      const socket = connect(server.port, '127.0.0.1', () => socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nBLAH\r\n\r\n'))
      let text = ''
      socket.on('data', (d: Buffer) => (text += d.toString('utf8')))
      socket.on('error', reject)
      socket.on('close', () => resolve(text))
    })
    expect(both).toMatch(/^HTTP\/1\.1 200 [\s\S]*"status":"ok"[\s\S]*HTTP\/1\.1 400 [\s\S]*"code":"bad_request"/)
  })

  it('keeps serving after all that', async () => {
    const res = await fetch(`${base}/healthz`)
    expect(res.status).toBe(200)
  })

  it('a body with Content-Encoding gzip (or any but identity) → 415 unsupported_media_type', async () => {
    const json = JSON.stringify({ type: 'order.paid', data: { a: 1 } })
    const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }
    for (const encoding of ['gzip', 'br', 'deflate', 'identity, gzip', 'GZIP']) {
      const body = encoding.toLowerCase().includes('gzip') ? gzipSync(json) : Buffer.from(json)
      const res = await fetch(`${base}/v1/events`, { method: 'POST', headers: { ...headers, 'content-encoding': encoding }, body })
      expect(res.status, encoding).toBe(415)
      const err = (await res.json()) as { error: { code: string; message: string } }
      expect(err.error.code).toBe('unsupported_media_type')
      expect(err.error.message).toMatch(/content encodings are not supported/i)
    }
    const plain = await fetch(`${base}/v1/events`, { method: 'POST', headers: { ...headers, 'content-encoding': 'identity' }, body: json })
    expect(plain.status).toBe(202)
  })
})

describe('listen failures exit 2 naming the setting', () => {
  let blocker: Server | null = null
  let cleanup: (() => void) | null = null
  afterEach(async () => {
    vi.restoreAllMocks()
    if (blocker) await new Promise((r) => blocker!.close(r))
    blocker = null
    cleanup?.()
    cleanup = null
  })

  const serveWith = async (extra: Record<string, string>): Promise<{ code: number; stderr: string }> => {
    const t = tempDir('postbox-listen-')
    cleanup = t.cleanup
    let stderr = ''
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stderr += String(chunk)
      return true
    })
    const env = { POSTBOX_DATA_DIR: t.dir, POSTBOX_ADMIN_KEY: ADMIN_KEY, POSTBOX_LOG_LEVEL: 'silent', POSTBOX_HOST: '127.0.0.1', ...extra }
    const code = await main(['serve'], env)
    return { code, stderr }
  }

  it('a port in use → exit 2, POSTBOX_PORT', async () => {
    blocker = createServer()
    await new Promise<void>((r) => blocker!.listen(0, '127.0.0.1', () => r()))
    const port = (blocker.address() as AddressInfo).port
    const { code, stderr } = await serveWith({ POSTBOX_PORT: String(port) })
    expect(code).toBe(2)
    expect(stderr).toContain('POSTBOX_PORT')
    expect(stderr).toContain('already in use')
  })

  it('an address not on this machine → exit 2, POSTBOX_HOST', async () => {
    const { code, stderr } = await serveWith({ POSTBOX_PORT: '0', POSTBOX_HOST: '192.0.2.1' })
    expect(code).toBe(2)
    expect(stderr).toMatch(/^postbox: POSTBOX_HOST: cannot listen on 192\.0\.2\.1:0/)
  })

  it('a host that is not an address or a host name → exit 2 before anything opens (check too)', async () => {
    for (const command of ['serve', 'check']) {
      const t = tempDir('postbox-listen-')
      let stderr = ''
      const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
        stderr += String(chunk)
        return true
      })
      const code = await main([command], { POSTBOX_DATA_DIR: t.dir, POSTBOX_HOST: '999.1.1.1', POSTBOX_LOG_LEVEL: 'silent' })
      spy.mockRestore()
      t.cleanup()
      expect(code, command).toBe(2)
      expect(stderr, command).toContain('POSTBOX_HOST')
    }
  })

  it('maps each listen error code to the setting that fixes it', async () => {
    const cases: [string, string | null][] = [
      ['EADDRINUSE', 'POSTBOX_PORT'],
      ['EACCES', 'POSTBOX_PORT'],
      ['ENOTFOUND', 'POSTBOX_HOST'],
      ['EAI_AGAIN', 'POSTBOX_HOST'],
      ['EADDRNOTAVAIL', 'POSTBOX_HOST'],
      ['EMFILE', null],
    ]
    for (const [code, variable] of cases) {
      const err = Object.assign(new Error(code), { code })
      const mapped = listenError(err, 'example.invalid', 80)
      if (variable === null) expect(mapped, code).toBe(err)
      else {
        expect(mapped, code).toBeInstanceOf(ConfigError)
        expect((mapped as ConfigError).variable, code).toBe(variable)
        expect((mapped as Error).message, code).toContain('example.invalid:80')
      }
    }
  })

  it('the configuration refuses what could never be bound', async () => {
    expect(() => loadConfig({ POSTBOX_HOST: '999.1.1.1' })).toThrow(/^POSTBOX_HOST:/)
  })
})
