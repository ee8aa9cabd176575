import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One request a receiver got. */
export interface ReceivedRequest {
  method: string
  path: string
  headers: IncomingHttpHeaders
  body: string
  at: number
}

/** What a handler answers; `delayMs` waits before answering, `hang` never answers. */
export interface Reply {
  status?: number
  headers?: Record<string, string>
  body?: string
  delayMs?: number
  hang?: boolean
}

/** A programmable handler: gets the request (and its index) and returns a reply. */
export type ReplyFn = (req: ReceivedRequest, index: number) => Reply | Promise<Reply>

/** A real HTTP server on 127.0.0.1 that records every request. */
export interface Receiver {
  readonly url: string
  readonly port: number
  readonly requests: ReceivedRequest[]
  /** Replaces the handler. */
  reply(fn: ReplyFn | Reply): void
  /** Resolves once at least `n` requests have arrived (rejects after `timeoutMs`). */
  waitFor(n: number, timeoutMs?: number): Promise<ReceivedRequest[]>
  close(): Promise<void>
}

/** Starts a receiver on an ephemeral port; the default reply is 200 `ok`. */
export async function startReceiver(handler: ReplyFn | Reply = { status: 200, body: 'ok' }): Promise<Receiver> {
  let fn: ReplyFn = typeof handler === 'function' ? handler : () => handler
  const requests: ReceivedRequest[] = []
  const waiters: { n: number; resolve: () => void }[] = []
  const hanging = new Set<ServerResponse>()
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const rec: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() }
      const index = requests.push(rec) - 1
      for (const w of waiters.filter((w) => requests.length >= w.n)) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve()
      }
      void Promise.resolve(fn(rec, index)).then((r) => {
        if (r.hang) {
          hanging.add(res)
          res.on('close', () => hanging.delete(res))
          return
        }
        const send = (): void => {
          if (res.destroyed) return
          res.writeHead(r.status ?? 200, r.headers ?? {})
          res.end(r.body ?? '')
        }
        if (r.delayMs) {
          const t = setTimeout(send, r.delayMs)
          res.on('close', () => clearTimeout(t))
        } else send()
      })
    })
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    reply(h) {
      fn = typeof h === 'function' ? h : () => h
    },
    waitFor(n, timeoutMs = 5000) {
      if (requests.length >= n) return Promise.resolve(requests)
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`receiver got ${requests.length} of ${n} requests`)), timeoutMs)
        waiters.push({ n, resolve: () => (clearTimeout(t), resolve(requests)) })
      })
    },
    async close() {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
