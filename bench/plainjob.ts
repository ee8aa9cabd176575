/**
 * The same webhook work driven through plainjob (a SQLite job queue on better-sqlite3): N jobs
 * added in batches of 500 (as the Postbox run enqueues), CONCURRENCY plainjob workers on one
 * queue, each POSTing its job's JSON to the receiver with an undici Agent and reading the
 * answer. No signing, no attempt log: plainjob records done/failed only.
 */
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { better, defineQueue, defineWorker } from 'plainjob'
import { Agent } from 'undici'

const quiet = { error() {}, warn() {}, info() {}, debug() {} }

/** Jobs per second, from the first add to the last job done, on a new file `<name>.db` in `dir`. */
export async function plainjobThroughput(dir: string, url: string, n: number, concurrency: number, name = 'plainjob'): Promise<number> {
  const db = new Database(join(dir, `${name}.db`))
  const queue = defineQueue({ connection: better(db), logger: quiet })
  const agent = new Agent({ keepAliveTimeout: 30_000 })
  const u = new URL(url)
  let done = 0
  let finished: () => void = () => {}
  const all = new Promise<void>((r) => (finished = r))
  const workers = Array.from({ length: concurrency }, () =>
    defineWorker(
      'webhook',
      async (job) => {
        const res = await agent.request({ origin: u.origin, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json' }, body: job.data })
        await res.body.text()
        if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
      },
      { queue, logger: quiet, pollIntervall: 5, onCompleted: () => void (++done === n && finished()) },
    ),
  )
  const t0 = performance.now()
  const running = workers.map((w) => w.start())
  for (let i = 0; i < n; i += 500) {
    queue.addMany('webhook', Array.from({ length: Math.min(500, n - i) }, (_, j) => ({ id: `evt_${i + j}`, type: 'bench.event', timestamp: new Date().toISOString(), data: { i: i + j, pad: 'x'.repeat(64) } })))
    await new Promise((r) => setImmediate(r))
  }
  await all
  const ms = performance.now() - t0
  await Promise.all(workers.map((w) => w.stop()))
  await Promise.all(running)
  await agent.close()
  queue.close()
  return (n / ms) * 1000
}
