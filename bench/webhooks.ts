/**
 * Webhook benchmark.
 *
 * 1. Throughput: N events fanned out to one loopback endpoint, from the first enqueue to the last
 *    settled success, next to a raw undici POST loop with the same concurrency against the same
 *    receiver in the same run (the ceiling: no SQLite, no signing, no attempt log), and plainjob.
 *    Steady state: each of the three first does a warm-up run of WARM_EVENTS (its own stack and
 *    file), then they run in THROUGHPUT_ROUNDS alternating rounds and each figure is the median
 *    of its rounds. The first Postbox run of the process (cold: JIT, statements, sockets) is
 *    printed too.
 * 2. Latency: events sent one per transaction at ~150/s; the receiver measures enqueue → receipt.
 * 3. Where the gap comes from: the sender alone (no queue) and the queue alone (no HTTP), and the
 *    ceiling they put on the ratio on this machine.
 *
 * The receiver runs in a worker thread so it does not share Postbox's event loop; both sides
 * stamp times with performance.timeOrigin + performance.now(), which is comparable across threads.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { testConfig } from '../src/config.js'
import { systemClock } from '../src/lib/clock.js'
import { silentLogger } from '../src/log.js'
import { openStore, type Store } from '../src/store/index.js'
import { startCheckpointer } from '../src/store/sqlite/checkpointer.js'
import { claimedOf } from '../src/store/deliveries.js'
import { createDeliveryStack } from '../src/engine.js'
import { createWebhookService } from '../src/webhooks/service.js'
import type { Figure } from './figures.js'
import { closedLoop as closedLoopOf, rawPostLoop, startWorkerReceiver } from './loopback.js'
import { plainjobThroughput } from './plainjob.js'

const EVENTS = 20_000
const CONCURRENCY = 64
/** Events of each contender's warm-up run (JIT, prepared statements, sockets). */
const WARM_EVENTS = 5_000
/** Alternating measured rounds of the raw loop, Postbox and plainjob; figures are medians. */
const THROUGHPUT_ROUNDS = 3
/** Events per second of the light-load latency run. */
export const LATENCY_RATE = 150
const LATENCY_SECONDS = 6

const RECEIVER = `
const { parentPort } = require('node:worker_threads')
const http = require('node:http')
let count = 0
let latencies = []
const server = http.createServer((req, res) => {
  const chunks = []
  req.on('data', (c) => chunks.push(c))
  req.on('end', () => {
    const at = performance.timeOrigin + performance.now()
    count++
    try {
      const t = JSON.parse(Buffer.concat(chunks).toString()).data.t
      if (typeof t === 'number') latencies.push(at - t)
    } catch {}
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.end('ok')
  })
})
server.keepAliveTimeout = 60000
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }))
parentPort.on('message', (m) => {
  if (m === 'stats') { parentPort.postMessage({ count, latencies }); latencies = []; count = 0 }
  if (m === 'close') server.close(() => process.exit(0))
})
`

const now = (): number => performance.timeOrigin + performance.now()

/**
 * CPU time of the main thread so far, in ms (Linux: /proc/self/task/<pid>/stat, 10 ms ticks);
 * null elsewhere. Unlike wall-clock rates it barely moves when other processes share the box,
 * and it excludes the receiver's thread.
 */
function mainThreadCpuMs(): number | null {
  try {
    const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return null
  }
}

const processCpuMs = (): number => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

/** What one measured phase cost: its result, and CPU µs per item on the main thread and on the others (the receiver). */
export interface Measured<T> {
  value: T
  cpuUs: number | null
  otherCpuUs: number | null
}

/** Runs `fn` and returns its result with the CPU µs per item of the main thread and of all other threads (null when unknown). */
export async function withCpu<T>(items: number, fn: () => Promise<T>): Promise<Measured<T>> {
  const c0 = mainThreadCpuMs()
  const p0 = processCpuMs()
  const value = await fn()
  const c1 = mainThreadCpuMs()
  const p1 = processCpuMs()
  if (c0 === null || c1 === null) return { value, cpuUs: null, otherCpuUs: null }
  return { value, cpuUs: ((c1 - c0) * 1000) / items, otherCpuUs: ((p1 - p0 - (c1 - c0)) * 1000) / items }
}
const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')

/** The run with the median rate of an odd number of runs (its CPU figures come with it). */
function medianRun(runs: Measured<number>[]): Measured<number> {
  return [...runs].sort((a, b) => a.value - b.value)[Math.floor(runs.length / 2)]!
}

/** The loopback receiver: counts requests and their enqueue → receipt latencies, answered and reset on 'stats'. */
export async function startReceiver(): Promise<{ url: string; stats(): Promise<{ count: number; latencies: number[] }>; close(): Promise<void> }> {
  const rx = await startWorkerReceiver<{ count: number; latencies: number[] }>(RECEIVER, 'stats')
  return { url: rx.url, stats: rx.ask, close: rx.close }
}

/** Runs `one` n times with CONCURRENCY loops in parallel; returns calls per second. */
function closedLoop(n: number, one: () => Promise<void>): Promise<number> {
  return closedLoopOf(n, CONCURRENCY, one)
}

/** The raw undici POST loop against the same receiver, with the same concurrency. */
export function rawLoop(url: string, n: number): Promise<number> {
  return rawPostLoop(url, n, CONCURRENCY, JSON.stringify({ id: 'evt_x', type: 'bench.event', timestamp: new Date().toISOString(), data: { i: 0, pad: 'x'.repeat(64) } }))
}

/**
 * The sender alone: the same signed request, sent by the webhook sender with the same
 * concurrency, with no queue (no enqueue, claim or settle). Splits the gap to the raw loop into
 * the HTTP path and the SQLite work.
 */
async function senderOnly(dir: string, url: string, n: number, name = 'sender-only'): Promise<number> {
  const pb = postboxStack(dir, name)
  const ep = await pb.webhooks.endpoints.create({ url, max_concurrency: CONCURRENCY })
  const ev = await pb.webhooks.events.send({ type: 'bench.event', data: { i: 0, pad: 'x'.repeat(64) } })
  const claimed = (await pb.store.deliveries.claimDue({ limit: 1, now: Date.now(), defaultTimeoutMs: 30_000 }))[0]!
  const signal = new AbortController().signal
  const rate = await closedLoop(n, async () => {
    const r = await pb.sender.send(claimed, signal)
    if (r.outcome.kind !== 'success') throw new Error(`sender-only: ${r.attempt?.error ?? r.outcome.kind} (${ep.id}, ${ev.id})`)
  })
  await pb.close()
  return rate
}

/** Sends events i … i + 499 (fewer at the end of n) in one `sendMany`, as the throughput runs enqueue. */
export async function enqueueBatch(pb: { webhooks: ReturnType<typeof createWebhookService> }, i: number, n: number): Promise<void> {
  await pb.webhooks.events.sendMany(Array.from({ length: Math.min(500, n - i) }, (_, j) => ({ type: 'bench.event', data: { i: i + j, pad: 'x'.repeat(64) } })))
}

/**
 * Claims every due row and settles it as a success, in the dispatcher's shape (a settle and the
 * next claim share one transaction, `limit` rows per claim, each with its attempt), with no HTTP;
 * returns how many rows it settled.
 */
export async function settleAllAsSuccesses(store: Store, limit: number): Promise<number> {
  const opts = { limit, defaultTimeoutMs: 30_000, capacity: () => limit }
  let settled = 0
  let claimed = await store.deliveries.claimDue({ ...opts, now: Date.now() })
  while (claimed.length > 0) {
    const now = Date.now()
    const results = claimed.map((d) => ({ id: d.id, claimToken: d.claimToken, outcome: { kind: 'success' as const }, attempt: { startedAt: now, durationMs: 1, statusCode: 200, responseBody: 'ok' }, claimed: claimedOf(d) }))
    settled += results.length
    claimed = await store.tx(async (s) => {
      await s.deliveries.settle(results, now)
      return s.deliveries.claimDue({ ...opts, now })
    })
  }
  return settled
}

/**
 * The queue alone: the same enqueue as the throughput run, then claim and settle-success in the
 * dispatcher's shape (a settle and the next claim share one transaction, CONCURRENCY rows per
 * round) with no HTTP. Its main-thread CPU per delivery is the SQLite work of the pipeline.
 */
async function queueOnly(dir: string, n: number): Promise<number> {
  const pb = postboxStack(dir, 'queue-only')
  await pb.webhooks.endpoints.create({ url: 'http://127.0.0.1:9/unused', max_concurrency: CONCURRENCY })
  for (let i = 0; i < n; i += 500) await enqueueBatch(pb, i, n)
  const settled = await settleAllAsSuccesses(pb.store, CONCURRENCY)
  if (settled !== n) throw new Error(`queue-only: settled ${settled} of ${n}`)
  await pb.close()
  return settled
}

export function postboxStack(dir: string, name: string) {
  const store = openStore(join(dir, `${name}.db`))
  let successes = 0
  // The default global cap (256): the endpoint's max_concurrency (CONCURRENCY) is what binds.
  const config = testConfig({ allowNetworks: ['127.0.0.0/8'] })
  const log = silentLogger()
  const deps = { store, config, clock: systemClock, rng: Math.random, log }
  const webhooks = createWebhookService(deps)
  const observer = { attempt: (_c: string, outcome: string) => void (outcome === 'success' && successes++) }
  // The engine's own wiring (src/engine.ts), without the notify channels.
  const stack = createDeliveryStack({ ...deps, webhooks, observer })
  const { sender, dispatcher } = stack
  // As in the server (Postbox.start): WAL checkpoints run on a background connection.
  const checkpointer = startCheckpointer(store.sqlite!, log)
  return {
    store,
    successes: () => successes,
    webhooks,
    sender,
    dispatcher,
    async close() {
      await stack.stop(1000)
      await checkpointer.stop()
      await store.close()
    },
  }
}

/** Waits until `n` successes were reported and settled (the observer fires just before the settle). */
export async function waitForSuccess(pb: { successes(): number; store: Store }, n: number): Promise<void> {
  while (pb.successes() < n) await new Promise((r) => setTimeout(r, 1))
  while (((await pb.store.deliveries.countByStatus()).success ?? 0) < n) await new Promise((r) => setImmediate(r))
}

/** What the throughput and latency runs drive: the SQLite stack above, or bench/pg-stack.ts's on PostgreSQL. */
export interface BenchStack {
  store: Store
  webhooks: ReturnType<typeof createWebhookService>
  dispatcher: { start(): void }
  successes(): number
  close(): Promise<void>
}

/** Enqueue → receiver → settled for n events on `pb` (closed afterwards): deliveries per second. */
export async function stackThroughput(pb: BenchStack, url: string, n: number): Promise<number> {
  await pb.webhooks.endpoints.create({ url, max_concurrency: CONCURRENCY })
  pb.dispatcher.start()
  const t0 = performance.now()
  for (let i = 0; i < n; i += 500) {
    await enqueueBatch(pb, i, n)
    await new Promise((r) => setImmediate(r))
  }
  await waitForSuccess(pb, n)
  const ms = performance.now() - t0
  await pb.close()
  return (n / ms) * 1000
}

/** Events sent one per transaction at LATENCY_RATE for LATENCY_SECONDS on `pb` (closed afterwards); the receiver records enqueue → receipt. Returns how many were sent. */
export async function stackLatency(pb: BenchStack, url: string): Promise<number> {
  await pb.webhooks.endpoints.create({ url })
  pb.dispatcher.start()
  const total = LATENCY_RATE * LATENCY_SECONDS
  const interval = 1000 / LATENCY_RATE
  const start = performance.now()
  for (let i = 0; i < total; i++) {
    const due = start + i * interval
    const wait = due - performance.now()
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
    await pb.webhooks.events.send({ type: 'bench.latency', data: { i, t: now() } })
  }
  await waitForSuccess(pb, total)
  await pb.close()
  return total
}

/** The p-th percentile of an ascending array. */
export const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

/** Runs the webhook benchmark and prints deliveries/s (with the ratio to raw undici) and latency percentiles. */
export async function run(): Promise<Figure[]> {
  const dir = mkdtempSync(join(tmpdir(), 'postbox-bench-webhooks-'))
  const rx = await startReceiver()
  try {
    /** Runs `fn` (n requests to the receiver) with its CPU, and checks the receiver got them all. */
    const counted = async (what: string, n: number, fn: () => Promise<number>): Promise<Measured<number>> => {
      const m = await withCpu(n, fn)
      const got = (await rx.stats()).count
      if (got !== n) throw new Error(`${what}: receiver got ${got} of ${n}`)
      return m
    }
    await rx.stats()
    // The cold run first: this process has run none of Postbox's code yet.
    const cold = await counted('postbox (cold)', WARM_EVENTS, () => stackThroughput(postboxStack(dir, 'cold'), rx.url, WARM_EVENTS))
    await counted('raw (warm-up)', WARM_EVENTS, () => rawLoop(rx.url, WARM_EVENTS))
    await counted('plainjob (warm-up)', WARM_EVENTS, () => plainjobThroughput(dir, rx.url, WARM_EVENTS, CONCURRENCY, 'plainjob-warm'))
    const rounds: { raw: Measured<number>; ours: Measured<number>; plain: Measured<number> }[] = []
    for (let r = 0; r < THROUGHPUT_ROUNDS; r++) {
      const raw = await counted('raw', EVENTS, () => rawLoop(rx.url, EVENTS))
      const ours = await counted('postbox', EVENTS, () => stackThroughput(postboxStack(dir, `throughput${r}`), rx.url, EVENTS))
      const plain = await counted('plainjob', EVENTS, () => plainjobThroughput(dir, rx.url, EVENTS, CONCURRENCY, `plainjob${r}`))
      rounds.push({ raw, ours, plain })
    }
    const raw = medianRun(rounds.map((x) => x.raw))
    const ours = medianRun(rounds.map((x) => x.ours))
    const plain = medianRun(rounds.map((x) => x.plain))
    await counted('sender-only (warm-up)', WARM_EVENTS, () => senderOnly(dir, rx.url, WARM_EVENTS, 'sender-only-warm'))
    const alone = await counted('sender-only', EVENTS, () => senderOnly(dir, rx.url, EVENTS))
    const queue = await withCpu(EVENTS, () => queueOnly(dir, EVENTS))
    const sent = await stackLatency(postboxStack(dir, 'latency'), rx.url)
    const lat = (await rx.stats()).latencies.sort((a, b) => a - b)
    if (lat.length !== sent) throw new Error(`latency samples ${lat.length} of ${sent}`)
    const cpu = (x: number | null): string => (x === null ? 'n/a' : `${x.toFixed(1)} µs`)
    console.log(`events: ${fmt(EVENTS)} to one loopback endpoint, concurrency ${CONCURRENCY}; receiver in a worker thread; each contender warmed up with ${fmt(WARM_EVENTS)}, then ${THROUGHPUT_ROUNDS} alternating rounds, medians`)
    const each = (k: 'raw' | 'ours' | 'plain'): string => rounds.map((x) => fmt(x[k].value)).join(', ')
    console.log(`rounds (deliveries/s): raw ${each('raw')}; postbox ${each('ours')}; plainjob ${each('plain')}. Postbox's cold first run (${fmt(WARM_EVENTS)} events): ${fmt(cold.value)}/s, ${cpu(cold.cpuUs)} of main-thread CPU per delivery`)
    console.log('| measure | postbox | raw undici loop | ratio |')
    console.log('| --- | ---: | ---: | ---: |')
    const cpuRatio = (a: number | null, b: number | null): string => (a && b ? (b / a).toFixed(2) : 'n/a')
    console.log(`| deliveries/s, enqueue → receiver → settled | ${fmt(ours.value)} | ${fmt(raw.value)} | ${(ours.value / raw.value).toFixed(2)} |`)
    console.log(`| plainjob (SQLite job queue), same receiver and concurrency: jobs/s | ${fmt(plain.value)} | ${fmt(raw.value)} | ${(plain.value / raw.value).toFixed(2)} |`)
    console.log(`| postbox / plainjob | ${fmt(ours.value)} | ${fmt(plain.value)} | ${(ours.value / plain.value).toFixed(2)} |`)
    console.log(`| main-thread CPU per delivery (enqueue included) | ${cpu(ours.cpuUs)} | ${cpu(raw.cpuUs)} | ${cpuRatio(ours.cpuUs, raw.cpuUs)} |`)
    console.log(`| receiver-side CPU per delivery (other threads) | ${cpu(ours.otherCpuUs)} | ${cpu(raw.otherCpuUs)} | |`)
    console.log(`| sender alone, no queue: requests/s | ${fmt(alone.value)} | ${fmt(raw.value)} | ${(alone.value / raw.value).toFixed(2)} |`)
    console.log(`| sender alone: main-thread CPU per request | ${cpu(alone.cpuUs)} | ${cpu(raw.cpuUs)} | ${cpuRatio(alone.cpuUs, raw.cpuUs)} |`)
    console.log(`| queue alone, no HTTP: main-thread CPU per delivery | ${cpu(queue.cpuUs)} | | |`)
    if (alone.cpuUs && queue.cpuUs && ours.otherCpuUs !== null) {
      // A model, not a measurement: the pipeline's rate cannot beat one thread doing the sender's
      // and the queue's work, nor (with the queue on a thread of its own) the machine's CPUs
      // doing that work plus the receiver's.
      const cpus = availableParallelism()
      const oneThread = 1e6 / (alone.cpuUs + queue.cpuUs)
      const ownThread = Math.min(1e6 / Math.max(alone.cpuUs, queue.cpuUs), (cpus * 1e6) / (alone.cpuUs + queue.cpuUs + ours.otherCpuUs))
      console.log(`| ceiling, sender + queue on one thread: 1 / (sender alone + queue alone) | ${fmt(oneThread)} | ${fmt(raw.value)} | ${(oneThread / raw.value).toFixed(2)} |`)
      console.log(`| ceiling, queue on its own thread, ${cpus} CPUs shared with the receiver | ${fmt(ownThread)} | ${fmt(raw.value)} | ${(ownThread / raw.value).toFixed(2)} |`)
    }
    console.log(`latency enqueue → receipt at ${LATENCY_RATE} events/s (${fmt(sent)} events): p50 ${pct(lat, 50).toFixed(2)} ms, p90 ${pct(lat, 90).toFixed(2)} ms, p99 ${pct(lat, 99).toFixed(2)} ms, max ${lat[lat.length - 1]!.toFixed(2)} ms`)
    const e2e = ours.value / raw.value
    const vsPlain = ours.value / plain.value
    return [
      { measure: 'end to end / raw undici loop', value: `${fmt(ours.value)} / ${fmt(raw.value)} = ${e2e.toFixed(2)}`, target: '>= 0.6', met: e2e >= 0.6 },
      { measure: 'end to end / plainjob', value: `${fmt(ours.value)} / ${fmt(plain.value)} = ${vsPlain.toFixed(2)}`, target: '>= 2.5', met: vsPlain >= 2.5 },
      { measure: 'main-thread CPU per delivery in the pipeline', value: `${cpu(ours.cpuUs)} (raw loop ${cpu(raw.cpuUs)})`, target: '', met: null },
      { measure: `latency at ${LATENCY_RATE} events/s, p50 / p99`, value: `${pct(lat, 50).toFixed(2)} / ${pct(lat, 99).toFixed(2)} ms`, target: '<= 5 / <= 25 ms', met: pct(lat, 50) <= 5 && pct(lat, 99) <= 25 },
    ]
  } finally {
    await rx.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
