import { createServer, type Server } from 'node:http'
import type { Socket } from 'node:net'

/** One request as the crash receiver saw it. */
export interface ReceivedRequest {
  webhookId: string
  seq: number
  attempt: number
  /** What the receiver answered. */
  status: number
  /** When the answer was written (Date.now()). */
  at: number
}

/** A webhook receiver that records every request and fails a fixed share of them with 503. */
export interface CrashReceiver {
  readonly url: string
  readonly log: readonly ReceivedRequest[]
  /** seq → the requests for it that were answered 2xx. */
  successesBySeq(): Map<number, ReceivedRequest[]>
  close(): Promise<void>
}

/**
 * Starts the receiver. `failEvery: 5` answers every fifth request 503 (20 %), deterministically
 * spaced so the circuit breaker (5 consecutive failures) never opens on this endpoint.
 */
export async function startCrashReceiver(opts: { failEvery?: number } = {}): Promise<CrashReceiver> {
  const log: ReceivedRequest[] = []
  const sockets = new Set<Socket>()
  let n = 0
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = []
    req.on('data', (b: Buffer) => parts.push(b))
    req.on('end', () => {
      n++
      const fail = opts.failEvery !== undefined && n % opts.failEvery === 0
      let seq = -1
      try {
        seq = (JSON.parse(Buffer.concat(parts).toString('utf8')) as { data: { seq: number } }).data.seq
      } catch {}
      const status = fail ? 503 : 204
      log.push({
        webhookId: String(req.headers['webhook-id'] ?? ''),
        seq,
        attempt: Number(req.headers['postbox-attempt'] ?? 0),
        status,
        at: Date.now(),
      })
      res.writeHead(status)
      res.end()
    })
  })
  server.on('connection', (s: Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no address')
  return {
    url: `http://127.0.0.1:${address.port}/hook`,
    log,
    successesBySeq() {
      const out = new Map<number, ReceivedRequest[]>()
      for (const r of log) {
        if (r.status >= 300) continue
        const list = out.get(r.seq) ?? []
        list.push(r)
        out.set(r.seq, list)
      }
      return out
    },
    async close() {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
