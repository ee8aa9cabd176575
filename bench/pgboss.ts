/**
 * The same webhook work driven through pg-boss (a PostgreSQL job queue) on the database at
 * `url`: N jobs inserted in batches of 500 (as the Postbox run enqueues), `concurrency / batch` loops that
 * each fetch `batch` jobs, send them at once and complete them in one call, each POSTing its job's JSON to the receiver
 * with an undici Agent and reading the answer.
 */
import PgBoss from 'pg-boss'
import { Agent } from 'undici'

/**
 * Jobs per second, from the first insert to the last job completed; `batch` jobs per fetch.
 * `beforeStop` runs once every job is done, while pg-boss's connections are still open.
 */
export async function pgbossThroughput(url: string, receiver: string, n: number, concurrency: number, batch = 1, beforeStop?: () => Promise<void>): Promise<number> {
  const boss = new PgBoss({ connectionString: url, max: Math.max(4, Math.ceil(concurrency / batch) + 2), schedule: false, supervise: false, migrate: true })
  boss.on('error', () => {})
  await boss.start()
  const queue = `bench_${Date.now()}`
  await boss.createQueue(queue)
  const agent = new Agent({ keepAliveTimeout: 30_000 })
  const u = new URL(receiver)
  let done = 0
  let finished: () => void = () => {}
  const all = new Promise<void>((r) => (finished = r))
  const send = async (data: unknown): Promise<void> => {
    const res = await agent.request({ origin: u.origin, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) })
    await res.body.text()
    if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
  }
  // pg-boss's own work() sleeps its polling interval (0.5 s at least) after every fetch; these
  // loops fetch again at once while jobs come back, which is pg-boss at its fastest.
  let stop = false
  const loop = async (): Promise<void> => {
    while (!stop) {
      const jobs = await boss.fetch<unknown>(queue, { batchSize: batch })
      if (jobs.length === 0) {
        await new Promise((r) => setTimeout(r, 2))
        continue
      }
      await Promise.all(jobs.map((j) => send(j.data)))
      await boss.complete(queue, jobs.map((j) => j.id))
      done += jobs.length
      if (done >= n) finished()
    }
  }
  const t0 = performance.now()
  const loops = Array.from({ length: Math.ceil(concurrency / batch) }, loop)
  for (let i = 0; i < n; i += 500) {
    await boss.insert(Array.from({ length: Math.min(500, n - i) }, (_, j) => ({ name: queue, data: { id: `evt_${i + j}`, type: 'bench.event', timestamp: new Date().toISOString(), data: { i: i + j, pad: 'x'.repeat(64) } } })))
  }
  await all
  const ms = performance.now() - t0
  stop = true
  await Promise.all(loops)
  await beforeStop?.()
  await boss.stop({ graceful: false, wait: true })
  await agent.close()
  return (n / ms) * 1000
}
