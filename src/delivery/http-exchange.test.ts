import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { Agent } from 'undici'
import { startExchange, type ExchangeRequest } from './http-exchange.js'

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void

describe('startExchange', () => {
  let handler: Handler = (_req, res) => res.end('ok')
  const server = http.createServer((req, res) => handler(req, res))
  let origin = ''
  let agent: Agent

  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterEach(async () => {
    await agent?.destroy()
    server.closeAllConnections()
  })
  afterAll(() => new Promise<void>((r) => server.close(() => r())))

  const request = (over: Partial<ExchangeRequest> = {}): ExchangeRequest => ({
    origin,
    path: '/hook?x=1',
    method: 'POST',
    headers: ['content-type', 'application/json', 'x-custom', 'yes'],
    body: '{"a":1}',
    timeoutMs: 2000,
    ...over,
  })
  const start = (over: Partial<ExchangeRequest> = {}, limit?: number) => {
    agent = new Agent()
    return startExchange(agent, request(over), limit)
  }

  it('sends method, path, headers and body, and returns status, retry-after and the body', async () => {
    let seen: { method?: string; url?: string; custom?: string; body?: string } = {}
    handler = (req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        seen = { method: req.method, url: req.url, custom: req.headers['x-custom'] as string, body: Buffer.concat(chunks).toString() }
        res.writeHead(503, { 'Retry-After': '7' })
        res.end('busy')
      })
    }
    const r = await start().result
    expect(seen).toEqual({ method: 'POST', url: '/hook?x=1', custom: 'yes', body: '{"a":1}' })
    expect(r).toMatchObject({ statusCode: 503, retryAfter: '7', body: 'busy', error: null, timedOut: false, aborted: false, requestSent: true })
  })

  it('skips an informational 103 and its headers, and reports the final answer', async () => {
    handler = (_req, res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style', 'retry-after': '99' }, () => {
        res.writeHead(503, { 'content-type': 'text/plain' })
        res.end('later')
      })
    }
    const r = await start().result
    expect(r).toMatchObject({ statusCode: 503, retryAfter: null, body: 'later', error: null })
  })

  it('keeps at most `limit` bytes of a body that never ends, without splitting a character', async () => {
    handler = (_req, res) => {
      res.writeHead(200)
      res.write('é'.repeat(40))
      // Never ends: the exchange must stop reading on its own.
    }
    const r = await start({}, 51).result
    expect(r.statusCode).toBe(200)
    expect(r.body).toBe('é'.repeat(25))
  })

  it('times out a receiver that never answers, with the request sent', async () => {
    handler = () => {}
    const r = await start({ timeoutMs: 100 }).result
    expect(r).toMatchObject({ statusCode: null, timedOut: true, aborted: false, requestSent: true, body: null })
  })

  it('reports an abort before the request went out as not sent', async () => {
    handler = (_req, res) => res.end('ok')
    const x = start()
    x.abort(new Error('shutdown'))
    const r = await x.result
    expect(r).toMatchObject({ aborted: true, requestSent: false, statusCode: null })
  })

  it('reports a refused connection as a transport error', async () => {
    const closed = http.createServer()
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((r) => closed.close(() => r()))
    const r = await start({ origin: `http://127.0.0.1:${port}` }).result
    expect(r.statusCode).toBeNull()
    expect((r.error as { code?: string }).code).toBe('ECONNREFUSED')
    expect(r.requestSent).toBe(false)
  })
})
