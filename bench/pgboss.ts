/**
 * The same webhook work driven through pg-boss (a PostgreSQL job queue) on the database at
 * `url`: N jobs inserted in batches of 500 (as the Postbox run enqueues), each job's JSON POSTed
 * to the receiver with an undici Agent and its answer read, `concurrency` jobs in flight. Two
 * consumers: pg-boss's own `work()` API (what its users run), and a hand-written loop over
 * `fetch()` and `complete()` without `work()`'s polling sleep (pg-boss at its fastest).
 */
import PgBoss from 'pg-boss'
import { Agent } from 'undici'

/** How the jobs are consumed: pg-boss's `work()` handlers, or loops over `fetch()` / `complete()`. */
export type PgbossConsumer = 'work' | 'fetch'

/**
 * Jobs per second, from the first insert to the last job completed; `batch` jobs per fetch and
 * `concurrency / batch` workers or loops. `beforeStop` runs once every job is done, while
 * pg-boss's connections are still open.
 */
export async function pgbossThroughput(
  url: string, receiver: string, n: number, concurrency: number, batch: number, consumer: PgbossConsumer, beforeStop?: () => Promise<void>,
): Promise<number> {
  const workers = Math.ceil(concurrency / batch)
  const boss = new PgBoss({ connectionString: url, max: Math.max(4, workers + 2), schedule: false, supervise: false, migrate: true })
  boss.on('error', () => {})
  await boss.start()
  const queue = `bench_${Date.now()}`
  await boss.createQueue(queue)
  const agent = new Agent({ keepAliveTimeout: 30_000 })
  const u = new URL(receiver)
  let done = 0
  let finished: () => void = () => {}
  const all = new Promise<void>((r) => (finished = r))
  const count = (k: number): void => {
    done += k
    if (done >= n) finished()
  }
  const send = async (data: unknown): Promise<void> => {
    const res = await agent.request({ origin: u.origin, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) })
    await res.body.text()
    if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
  }

  let stop = false
  let loops: Promise<void>[] = []
  const t0 = performance.now()
  if (consumer === 'work') {
    // pg-boss completes the batch itself once the handler resolves; after a fetch it sleeps
    // what is left of its polling interval (0.5 s at the least it allows).
    for (let w = 0; w < workers; w++) {
      await boss.work<unknown>(queue, { batchSize: batch, pollingIntervalSeconds: 0.5 }, async (jobs) => {
        await Promise.all(jobs.map((j) => send(j.data)))
        count(jobs.length)
      })
    }
  } else {
    const loop = async (): Promise<void> => {
      while (!stop) {
        const jobs = await boss.fetch<unknown>(queue, { batchSize: batch })
        if (jobs.length === 0) {
          await new Promise((r) => setTimeout(r, 2))
          continue
        }
        await Promise.all(jobs.map((j) => send(j.data)))
        await boss.complete(queue, jobs.map((j) => j.id))
        count(jobs.length)
      }
    }
    loops = Array.from({ length: workers }, loop)
  }
  for (let i = 0; i < n; i += 500) {
    await boss.insert(Array.from({ length: Math.min(500, n - i) }, (_, j) => ({ name: queue, data: { id: `evt_${i + j}`, type: 'bench.event', timestamp: new Date().toISOString(), data: { i: i + j, pad: 'x'.repeat(64) } } })))
  }
  await all
  const ms = performance.now() - t0
  stop = true
  await Promise.all(loops)
  await beforeStop?.()
  await boss.stop({ graceful: consumer === 'work', wait: true, timeout: 5_000 })
  await agent.close()
  return (n / ms) * 1000
}
