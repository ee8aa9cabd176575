/**
 * One SQLite end-to-end measurement for the `pg` suite's before/after comparison (bench/pg.ts):
 * `node dist/bench/sqlite-cpu.js <dist root> <n>` loads `<dist root>/bench/webhooks.js` (this
 * build's, or the one before the asynchronous Store, whose stack calls are synchronous: awaiting
 * them is harmless) and fans n events out to a loopback receiver through the dispatcher, as the
 * `webhooks` suite's throughput run does. Prints one JSON line: main-thread CPU µs per delivery
 * (enqueue → receiver → settled) and deliveries per second.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

interface Stack {
  webhooks: { endpoints: { create(o: { url: string; max_concurrency: number }): unknown } }
  dispatcher: { start(): void }
  close(): Promise<void>
}
interface WebhooksBench {
  startReceiver(): Promise<{ url: string; stats(): Promise<{ count: number }>; close(): Promise<void> }>
  postboxStack(dir: string, name: string): Stack | Promise<Stack>
  enqueueBatch(pb: Stack, i: number, n: number): void | Promise<void>
  waitForSuccess(pb: Stack, n: number): Promise<void>
}

const CONCURRENCY = 64

/** Main-thread CPU ms (Linux /proc, 10 ms ticks). */
function mainThreadCpuMs(): number {
  const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

const root = resolve(process.argv[2]!)
const n = Number(process.argv[3] ?? 5000)
const mod = (await import(pathToFileURL(join(root, 'bench/webhooks.js')).href)) as WebhooksBench
const dir = mkdtempSync(join(tmpdir(), 'postbox-bench-sqlite-cpu-'))
const rx = await mod.startReceiver()

/** n events through the stack; returns main-thread CPU µs per delivery and the rate. */
async function once(name: string, count: number): Promise<{ cpuUs: number; rate: number }> {
  const pb = await mod.postboxStack(dir, name)
  await pb.webhooks.endpoints.create({ url: rx.url, max_concurrency: CONCURRENCY })
  pb.dispatcher.start()
  const c0 = mainThreadCpuMs()
  const t0 = performance.now()
  for (let i = 0; i < count; i += 500) {
    await mod.enqueueBatch(pb, i, count)
    await new Promise((r) => setImmediate(r))
  }
  await mod.waitForSuccess(pb, count)
  const ms = performance.now() - t0
  const cpuUs = ((mainThreadCpuMs() - c0) * 1000) / count
  await pb.close()
  return { cpuUs, rate: (count / ms) * 1000 }
}

try {
  await once('warm', 1000)
  const got = await once('measured', n)
  const seen = await rx.stats()
  if (seen.count !== n + 1000) throw new Error(`receiver got ${seen.count} of ${n + 1000}`)
  console.log(JSON.stringify(got))
} finally {
  await rx.close()
  rmSync(dir, { recursive: true, force: true })
}
