/**
 * No growth: 200,000 webhook deliveries through the whole pipeline (service enqueue, dispatcher,
 * sender, receiver in a worker thread, settle), fed in batches of 500 with at most 10,000
 * waiting. RSS, V8 heap and external memory are read after a full GC once the first 20,000 are
 * settled and again after all 200,000; the target is the second RSS within 20 % of the first.
 * Bounded: if the run passes MAX_MS it stops where it is and says so. bench/pg-lean.ts runs the
 * same check on PostgreSQL.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import type { Figure } from './figures.js'
import { enqueueBatch, postboxStack, startReceiver, waitForSuccess, type BenchStack } from './webhooks.js'

const TOTAL = Number(process.env.BENCH_GROWTH_N ?? 200_000)
const FIRST = TOTAL / 10
const WAITING = 10_000
const MAX_MS = 240_000

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void
const mb = (b: number): string => `${(b / 1048576).toFixed(1)} MB`

/** Memory after a full GC and a short rest (timers, sockets and the WAL checkpoint settle). */
async function settled(): Promise<NodeJS.MemoryUsage> {
  for (let i = 0; i < 3; i++) {
    gc()
    await new Promise((r) => setTimeout(r, 300))
  }
  return process.memoryUsage()
}

/**
 * Feeds TOTAL deliveries through `pb` (its endpoint at `url`, closed afterwards) and returns the
 * figure; `label` names the backend in the printed lines ("" for SQLite, the default).
 */
export async function growthOf(pb: BenchStack, url: string, label = ''): Promise<Figure> {
  try {
    await pb.webhooks.endpoints.create({ url, max_concurrency: 64 })
    pb.dispatcher.start()
    const t0 = performance.now()
    let sent = 0
    const feed = async (upTo: number): Promise<void> => {
      while (sent < upTo && performance.now() - t0 < MAX_MS) {
        while (sent - pb.successes() >= WAITING) await new Promise((r) => setTimeout(r, 2))
        await enqueueBatch(pb, sent, upTo)
        sent = Math.min(upTo, sent + 500)
        await new Promise((r) => setImmediate(r))
      }
      await waitForSuccess(pb, sent)
    }
    await feed(FIRST)
    const first = await settled()
    await feed(TOTAL)
    const last = await settled()
    const secs = (performance.now() - t0) / 1000
    const done = pb.successes()
    const ratio = last.rss / first.rss
    console.log(`${label}${done.toLocaleString('en-US')} deliveries in ${secs.toFixed(0)} s through the pipeline to a loopback receiver, memory after a full GC`)
    console.log('| after | RSS | V8 heap used | heap committed | external |')
    console.log('| --- | ---: | ---: | ---: | ---: |')
    console.log(`| ${FIRST.toLocaleString('en-US')} | ${mb(first.rss)} | ${mb(first.heapUsed)} | ${mb(first.heapTotal)} | ${mb(first.external)} |`)
    console.log(`| ${done.toLocaleString('en-US')} | ${mb(last.rss)} | ${mb(last.heapUsed)} | ${mb(last.heapTotal)} | ${mb(last.external)} |`)
    console.log(`RSS ratio ${ratio.toFixed(2)} (target <= 1.20)${label ? '' : '; the SQLite page cache (cache_size 32 MB) fills as the file grows and counts in RSS'}`)
    const complete = done >= TOTAL
    return {
      measure: `${label}RSS after ${(done / 1000).toFixed(0)}k deliveries / after ${FIRST / 1000}k`,
      value: `${mb(last.rss)} / ${mb(first.rss)} = ${ratio.toFixed(2)} (heap used ${mb(last.heapUsed)} / ${mb(first.heapUsed)})${complete ? '' : ' (stopped at the time bound)'}`,
      target: '<= 1.20',
      met: complete ? ratio <= 1.2 : null,
    }
  } finally {
    await pb.close()
  }
}

/** Runs the growth check on SQLite and prints memory after the first tenth and after all deliveries. */
export async function run(): Promise<Figure[]> {
  const dir = mkdtempSync(join(tmpdir(), 'postbox-bench-growth-'))
  const rx = await startReceiver()
  try {
    return [await growthOf(postboxStack(dir, 'growth'), rx.url)]
  } finally {
    await rx.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
