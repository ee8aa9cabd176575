import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adapterErrorResponse } from '../src/api/app.js'
import { silentLogger } from '../src/log.js'
import { listen, type RunningServer } from '../src/server.js'
import { apiFixture, type ApiFixture } from './support/api.js'

/**
 * Requests that @hono/node-server cannot turn into a URL (`GET *`, `OPTIONS *`, a Host header
 * with a space, a backslash in the path) never reach a route: with `adapterErrorResponse` as the
 * adapter's errorHandler (as the server's `listen()` wires it) they get the documented error
 * JSON instead of an empty text/plain 400.
 */

/** Writes one raw request and reads until the server closes the connection (or 2 s pass). */
function raw(port: number, payload: string): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(payload))
    let text = ''
    socket.on('data', (d: Buffer) => (text += d.toString('utf8')))
    socket.on('error', reject)
    socket.setTimeout(2_000, () => socket.destroy())
    socket.on('close', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n', 2)
      resolve({ status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body })
    })
  })
}

describe('request targets the adapter refuses', () => {
  let f: ApiFixture
  let server: RunningServer
  let port: number
  beforeAll(async () => {
    f = await apiFixture({ port: 0, host: '127.0.0.1' })
    server = await listen(f.pb, silentLogger())
    port = server.port
  })
  afterAll(async () => {
    await server.close()
    await f.close()
  })

  it.each([
    ['an asterisk target', 'GET * HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['OPTIONS *', 'OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['a Host header with a space', 'GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n'],
    ['a backslash in the path', 'GET /v1\\events HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['no Host header', 'GET /healthz HTTP/1.1\r\n\r\n'],
    ['no Host header on a POST', 'POST /v1/events HTTP/1.1\r\ncontent-length: 2\r\n\r\n{}'],
  ])('%s → 400 bad_request as error JSON, connection closed', async (_name, payload) => {
    const res = await raw(port, payload)
    expect(res.status).toBe(400)
    expect(res.headers).toMatch(/\r\ncontent-type: application\/json\r\n/)
    expect(res.headers).toMatch(/\r\nconnection: close/)
    expect(JSON.parse(res.body)).toEqual({ error: { code: 'bad_request', message: expect.stringMatching(/^Malformed HTTP request/) } })
  })

  it('ordinary requests are untouched', async () => {
    const res = await raw(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    expect(res.status).toBe(200)
  })

  it('anything but a request error is 500 internal with no detail', async () => {
    const res = adapterErrorResponse(new Error('secret detail'))
    expect(res.status).toBe(500)
    expect(await res.json()).toEqual({ error: { code: 'internal', message: 'Internal error' } })
  })
})
