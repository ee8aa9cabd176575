/**
 * Issue #20's figures on PostgreSQL (docs/performance.md "PostgreSQL"), each run on a fresh
 * database of the server at POSTBOX_BENCH_PG_URL (else POSTBOX_TEST_PG_URL; skipped without):
 *
 * 1. End to end against the raw undici loop on the same receiver in the same run, with the
 *    main-thread CPU per delivery (enqueue, claim, send, settle) next to the raw loop's.
 * 2. Latency at light load (LATENCY_RATE events/s, one per transaction): enqueue → receipt.
 * 3. No growth: the growth suite's 200,000 deliveries, RSS after the first tenth and after all.
 *
 * The SQLite figures stay the targets (bench/webhooks.ts, bench/growth.ts); these are reported
 * next to the same target lines so the two backends read side by side.
 */
import type { Figure } from './figures.js'
import { growthOf } from './growth.js'
import { freshDb } from './pg.js'
import { pgStack } from './pg-stack.js'
import { LATENCY_RATE, pct, rawLoop, stackLatency, stackThroughput, startReceiver, withCpu } from './webhooks.js'

const N = Number(process.env.BENCH_PG_E2E_N ?? 10_000)

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')
const us = (x: number | null): string => (x === null ? 'n/a' : `${x.toFixed(1)} µs`)

/** Runs `fn` on a fresh database's URL and drops the database afterwards. */
async function onFreshDb<T>(adminUrl: string, fn: (url: string) => Promise<T>): Promise<T> {
  const db = await freshDb(adminUrl)
  try {
    return await fn(db.url)
  } finally {
    await db.drop()
  }
}

/** Runs the PostgreSQL figures of issue #20 and prints each next to its target. */
export async function run(): Promise<Figure[]> {
  const url = process.env.POSTBOX_BENCH_PG_URL || process.env.POSTBOX_TEST_PG_URL
  if (!url) {
    console.log('skipped: set POSTBOX_BENCH_PG_URL (or POSTBOX_TEST_PG_URL)')
    return []
  }
  const rx = await startReceiver()
  try {
    await rawLoop(rx.url, 2000) // warm-up for both sides' JIT and sockets
    await onFreshDb(url, async (db) => stackThroughput(await pgStack(db), rx.url, 1000))
    await rx.stats()
    const raw = await withCpu(N, () => rawLoop(rx.url, N))
    const ours = await withCpu(N, () => onFreshDb(url, async (db) => stackThroughput(await pgStack(db), rx.url, N)))
    if ((await rx.stats()).count !== 2 * N) throw new Error('PostgreSQL end to end: receiver count mismatch')
    const sent = await onFreshDb(url, async (db) => stackLatency(await pgStack(db), rx.url))
    const lat = (await rx.stats()).latencies.sort((a, b) => a - b)
    if (lat.length !== sent) throw new Error(`PostgreSQL latency samples ${lat.length} of ${sent}`)
    const e2e = ours.value / raw.value
    console.log(`${fmt(N)} events to one loopback endpoint, concurrency 64, PostgreSQL store on a fresh database`)
    console.log('| measure | postbox on PostgreSQL | raw undici loop | ratio |')
    console.log('| --- | ---: | ---: | ---: |')
    console.log(`| deliveries/s, enqueue → receiver → settled | ${fmt(ours.value)} | ${fmt(raw.value)} | ${e2e.toFixed(2)} |`)
    console.log(`| main-thread CPU per delivery (enqueue included) | ${us(ours.cpuUs)} | ${us(raw.cpuUs)} | |`)
    console.log(`latency enqueue → receipt at ${LATENCY_RATE} events/s on PostgreSQL: p50 ${pct(lat, 50).toFixed(2)} ms, p99 ${pct(lat, 99).toFixed(2)} ms, max ${lat[lat.length - 1]!.toFixed(2)} ms`)
    const growth = await onFreshDb(url, async (db) => growthOf(await pgStack(db), rx.url, 'PostgreSQL: '))
    return [
      { measure: 'PostgreSQL end to end / raw undici loop', value: `${fmt(ours.value)} / ${fmt(raw.value)} = ${e2e.toFixed(2)}`, target: '(report; >= 0.6 on SQLite)', met: null },
      { measure: 'PostgreSQL main-thread CPU per delivery in the pipeline', value: `${us(ours.cpuUs)} (raw loop ${us(raw.cpuUs)})`, target: '(report)', met: null },
      { measure: `PostgreSQL latency at ${LATENCY_RATE} events/s, p50 / p99`, value: `${pct(lat, 50).toFixed(2)} / ${pct(lat, 99).toFixed(2)} ms`, target: '<= 5 / <= 25 ms', met: pct(lat, 50) <= 5 && pct(lat, 99) <= 25 },
      growth,
    ]
  } finally {
    await rx.close()
  }
}
