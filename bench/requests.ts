/**
 * Durable HTTP requests and delayed delivery benchmark (docs/requests.md).
 *
 * 1. Throughput: N requests to one loopback receiver, from the first enqueue to the last settled
 *    success, next to the webhook path (N events to one endpoint with max_concurrency 16) and a
 *    raw undici POST loop with concurrency 16 (a request origin's limit), all against the same
 *    receiver in the same run.
 * 2. Idle: 100,000 delayed events (one delivery each, due in an hour) waiting, and the process
 *    CPU (process.cpuUsage) over a few seconds of the dispatcher idling, next to an empty queue.
 *
 * The receiver runs in a worker thread so it does not share Postbox's event loop.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Postbox } from '../src/postbox.js'
import { rawPostLoop, startWorkerReceiver } from './loopback.js'

const N = 10_000
/** A request origin's concurrency (ORIGIN_CONCURRENCY in delivery/origin-health.ts), used for every side. */
const CONCURRENCY = 16
const DELAYED = 100_000
const IDLE_SECONDS = 3

const RECEIVER = `
const { parentPort } = require('node:worker_threads')
const http = require('node:http')
let count = 0
const server = http.createServer((req, res) => {
  req.on('data', () => {})
  req.on('end', () => { count++; res.writeHead(200, { 'content-type': 'text/plain' }); res.end('ok') })
})
server.keepAliveTimeout = 60000
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }))
parentPort.on('message', (m) => {
  if (m === 'count') { parentPort.postMessage({ count }); count = 0 }
  if (m === 'close') server.close(() => process.exit(0))
})
`

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const cpuMs = (): number => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

/** The loopback receiver: counts requests, answered and reset on 'count'. */
async function startReceiver(): Promise<{ url: string; count(): Promise<number>; close(): Promise<void> }> {
  const rx = await startWorkerReceiver<{ count: number }>(RECEIVER, 'count')
  return { url: rx.url, count: async () => (await rx.ask()).count, close: rx.close }
}

/** The raw undici POST loop against the same receiver, at a request origin's concurrency. */
function rawLoop(url: string, n: number): Promise<number> {
  return rawPostLoop(url, n, CONCURRENCY, JSON.stringify({ order: 0, pad: 'x'.repeat(64) }))
}

/** A Postbox in `dir` that counts successful attempts through its onAttempt hook. */
async function open(dir: string, name: string): Promise<{ pb: Postbox; successes: () => number }> {
  let successes = 0
  const pb = await Postbox.open({
    db: join(dir, `${name}.db`),
    allowNetworks: ['127.0.0.0/8'],
    bootstrapAdminKey: false,
    onAttempt: (a) => void (a.outcome === 'success' && successes++),
  })
  return { pb, successes: () => successes }
}

async function waitFor(cond: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await cond())) await sleep(1)
}

/** Deliveries/s of `n` requests (kind `request`) or events to one endpoint (kind `webhook`), enqueued 500 per transaction. */
async function throughput(dir: string, url: string, kind: 'request' | 'webhook', n: number): Promise<number> {
  const { pb, successes } = await open(dir, kind)
  if (kind === 'webhook') await pb.endpoints.create({ url, max_concurrency: CONCURRENCY })
  pb.start()
  const t0 = performance.now()
  for (let i = 0; i < n; i += 500) {
    const m = Math.min(500, n - i)
    if (kind === 'webhook') await pb.events.sendMany(Array.from({ length: m }, (_, j) => ({ type: 'bench.event', data: { order: i + j, pad: 'x'.repeat(64) } })))
    else {
      await pb.store.tx(async (s) => {
        for (let j = 0; j < m; j++) await pb.requests.create({ url, body: { order: i + j, pad: 'x'.repeat(64) } }, { tx: s })
      })
    }
    await new Promise((r) => setImmediate(r))
  }
  await waitFor(() => successes() >= n)
  const ms = performance.now() - t0
  await pb.close()
  return (n / ms) * 1000
}

/** Process CPU ms per second while the dispatcher idles with `delayed` events waiting (an hour ahead). */
async function idleCpu(dir: string, name: string, delayed: number): Promise<{ cpuMsPerS: number; enqueueS: number }> {
  const { pb } = await open(dir, name)
  await pb.endpoints.create({ url: 'http://127.0.0.1:9/never' })
  const t0 = performance.now()
  for (let i = 0; i < delayed; i += 1000) await pb.events.sendMany(Array.from({ length: Math.min(1000, delayed - i) }, (_, j) => ({ type: 'bench.later', data: { i: i + j }, delay: '1h' })))
  const enqueueS = (performance.now() - t0) / 1000
  pb.start()
  // Let the start-up work (lock, repairs, retention sweep, first claims) finish.
  await sleep(1500)
  const c0 = cpuMs()
  const w0 = performance.now()
  await sleep(IDLE_SECONDS * 1000)
  const cpuMsPerS = (cpuMs() - c0) / ((performance.now() - w0) / 1000)
  const pending = (await pb.store.deliveries.queueDepth()).pending
  await pb.close()
  if (pending !== delayed) throw new Error(`idle: ${pending} pending of ${delayed}`)
  return { cpuMsPerS, enqueueS }
}

/** Runs the requests benchmark and prints the throughput ratios and the idle CPU. */
export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'postbox-bench-requests-'))
  const rx = await startReceiver()
  try {
    await rawLoop(rx.url, 2000) // warm-up
    await rx.count()
    const raw = await rawLoop(rx.url, N)
    const rawCount = await rx.count()
    const webhooks = await throughput(dir, rx.url, 'webhook', N)
    const webhookCount = await rx.count()
    const requests = await throughput(dir, rx.url, 'request', N)
    const requestCount = await rx.count()
    if (rawCount !== N || webhookCount !== N || requestCount !== N) throw new Error(`receiver counts ${rawCount}/${webhookCount}/${requestCount} of ${N}`)
    console.log(`${fmt(N)} to one loopback receiver, concurrency ${CONCURRENCY} (a request origin's limit); receiver in a worker thread`)
    console.log('| measure | per second | ratio to raw undici loop |')
    console.log('| --- | ---: | ---: |')
    console.log(`| raw undici loop | ${fmt(raw)} | 1.00 |`)
    console.log(`| webhooks (events → one endpoint, max_concurrency 16), enqueue → settled | ${fmt(webhooks)} | ${(webhooks / raw).toFixed(2)} |`)
    console.log(`| requests (POST /v1/requests path), enqueue → settled | ${fmt(requests)} | ${(requests / raw).toFixed(2)} |`)

    const empty = await idleCpu(dir, 'idle-empty', 0)
    const waiting = await idleCpu(dir, 'idle-delayed', DELAYED)
    console.log(`\nidle dispatcher, process CPU over ${IDLE_SECONDS} s (poll interval 250 ms):`)
    console.log('| queue | CPU ms per second |')
    console.log('| --- | ---: |')
    console.log(`| empty | ${empty.cpuMsPerS.toFixed(2)} |`)
    console.log(`| ${fmt(DELAYED)} delayed events waiting (enqueued in ${waiting.enqueueS.toFixed(1)} s) | ${waiting.cpuMsPerS.toFixed(2)} |`)
  } finally {
    await rx.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
