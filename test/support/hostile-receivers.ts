import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createTcpServer, type Server, type Socket } from 'node:net'

/**
 * Receivers that misbehave on purpose, for the fault and SSRF suites. Each one listens on an
 * ephemeral port of a loopback address, counts what reached it, tracks its open sockets so a
 * test can check the client let go of them, and destroys everything on `close()`.
 */
export interface HostileReceiver {
  /** `http://host:port/` of the receiver. */
  readonly url: string
  readonly host: string
  readonly port: number
  /** TCP connections accepted so far. */
  readonly connections: number
  /** Connections that are still open right now (the client has not let go). */
  readonly openConnections: number
  /** HTTP requests whose headers arrived (TCP-only receivers count the first data chunk). */
  readonly requests: number
  /** Bytes written to clients (the endless body receiver). */
  readonly bytesSent: number
  /** Resolves once every open connection has closed, or rejects after `timeoutMs`. */
  waitIdle(timeoutMs?: number): Promise<void>
  /** Stops listening and destroys every socket. */
  close(): Promise<void>
}

interface Counters {
  connections: number
  requests: number
  bytesSent: number
  sockets: Set<Socket>
}

function track(server: Server, c: Counters): void {
  server.on('connection', (socket: Socket) => {
    c.connections++
    c.sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => c.sockets.delete(socket))
  })
}

async function listen(server: Server, host: string, c: Counters): Promise<HostileReceiver> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, host, () => resolve())
  })
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('receiver has no TCP address')
  const port = address.port
  return {
    url: `http://${host}:${port}/`,
    host,
    port,
    get connections() {
      return c.connections
    },
    get openConnections() {
      return c.sockets.size
    },
    get requests() {
      return c.requests
    },
    get bytesSent() {
      return c.bytesSent
    },
    async waitIdle(timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (c.sockets.size > 0) {
        if (Date.now() > deadline) throw new Error(`${c.sockets.size} connection(s) to ${host}:${port} still open after ${timeoutMs} ms`)
        await new Promise((r) => setTimeout(r, 25))
      }
    },
    async close() {
      for (const s of c.sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

function counters(): Counters {
  return { connections: 0, requests: 0, bytesSent: 0, sockets: new Set() }
}

/** Accepts connections, reads the request and never answers; only the client's timeout ends it. */
export async function startHangingReceiver(host = '127.0.0.1'): Promise<HostileReceiver> {
  const c = counters()
  const server = createTcpServer((socket) => {
    let seen = false
    socket.on('data', () => {
      if (!seen) c.requests++
      seen = true
    })
  })
  track(server, c)
  return listen(server, host, c)
}

/** Resets every connection (TCP RST) as soon as the first bytes of a request arrive. */
export async function startResettingReceiver(host = '127.0.0.1'): Promise<HostileReceiver> {
  const c = counters()
  const server = createTcpServer((socket) => {
    socket.once('data', () => {
      c.requests++
      socket.resetAndDestroy()
    })
  })
  track(server, c)
  return listen(server, host, c)
}

/**
 * Answers `status` and then streams a body that never ends, as fast as the client reads it,
 * until the client goes away. A sender that buffers bodies runs out of memory here.
 */
export async function startEndlessBodyReceiver(status = 200, host = '127.0.0.1'): Promise<HostileReceiver> {
  const c = counters()
  const chunk = Buffer.alloc(64 * 1024, 'x')
  const server = createHttpServer((req: IncomingMessage, res: ServerResponse) => {
    c.requests++
    req.resume()
    res.writeHead(status, { 'content-type': 'text/plain' })
    let stopped = false
    res.on('close', () => {
      stopped = true
    })
    const pump = (): void => {
      while (!stopped) {
        c.bytesSent += chunk.length
        if (!res.write(chunk)) {
          res.once('drain', pump)
          return
        }
      }
    }
    pump()
  })
  track(server, c)
  return listen(server, host, c)
}

/** Answers every request with `status` (a 30x) and `Location: location`. */
export async function startRedirectReceiver(location: string, status = 302, host = '127.0.0.1'): Promise<HostileReceiver> {
  const c = counters()
  const server = createHttpServer((req, res) => {
    c.requests++
    req.resume()
    res.writeHead(status, { location, 'content-type': 'text/plain' })
    res.end('moved')
  })
  track(server, c)
  return listen(server, host, c)
}

/** A well-behaved receiver that answers 200 and records every request; the target that must see nothing. */
export async function startRecordingReceiver(host = '127.0.0.1'): Promise<HostileReceiver & { readonly bodies: string[] }> {
  const c = counters()
  const bodies: string[] = []
  const server = createHttpServer((req, res) => {
    c.requests++
    const parts: Buffer[] = []
    req.on('data', (b: Buffer) => parts.push(b))
    req.on('end', () => {
      bodies.push(Buffer.concat(parts).toString('utf8'))
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end('ok')
    })
  })
  track(server, c)
  const receiver = await listen(server, host, c)
  return Object.assign(receiver, { bodies })
}
