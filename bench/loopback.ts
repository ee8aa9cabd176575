/**
 * The loopback plumbing the HTTP benchmarks share (docs/performance.md): a receiver in a worker
 * thread, so it does not share Postbox's event loop, and closed loops of N calls, including the
 * raw undici POST loop every Postbox figure is set next to.
 */
import { Worker } from 'node:worker_threads'
import { Agent } from 'undici'

/** A receiver running in a worker thread: its URL, a query of its counters, and close(). */
export interface WorkerReceiver<T> {
  url: string
  /** Posts the query message and resolves with the worker's answer (counters reset there). */
  ask(): Promise<T>
  close(): Promise<void>
}

/**
 * Starts `source` (CommonJS, evaluated in a worker) that posts `{ port }` once listening on
 * 127.0.0.1, answers `query` with its counters and exits on 'close'; its URL ends in /hook.
 */
export function startWorkerReceiver<T>(source: string, query: string): Promise<WorkerReceiver<T>> {
  const worker = new Worker(source, { eval: true })
  return new Promise((resolve) => {
    worker.once('message', ({ port }: { port: number }) => {
      resolve({
        url: `http://127.0.0.1:${port}/hook`,
        ask: () =>
          new Promise((r) => {
            worker.once('message', (m: T) => r(m))
            worker.postMessage(query)
          }),
        close: async () => {
          worker.postMessage('close')
          await new Promise((r) => worker.once('exit', r))
        },
      })
    })
  })
}

/** Runs `one` n times with `concurrency` loops in parallel; returns calls per second. */
export async function closedLoop(n: number, concurrency: number, one: () => Promise<void>): Promise<number> {
  let next = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++
        await one()
      }
    }),
  )
  return (n / (performance.now() - t0)) * 1000
}

/** The ceiling: n raw undici POSTs of `body` (JSON) to `url`, `concurrency` at a time, on one keep-alive agent; returns requests per second. */
export async function rawPostLoop(url: string, n: number, concurrency: number, body: string): Promise<number> {
  const agent = new Agent({ keepAliveTimeout: 30_000 })
  const u = new URL(url)
  const rate = await closedLoop(n, concurrency, async () => {
    const res = await agent.request({ origin: u.origin, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json' }, body })
    await res.body.text()
  })
  await agent.close()
  return rate
}
