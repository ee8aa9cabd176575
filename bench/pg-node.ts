/**
 * One Postbox node of the `pg` suite's multi-node run (bench/pg.ts), in a worker thread: it opens
 * the PostgreSQL store at `workerData.url`, builds the engine's delivery stack (src/engine.ts)
 * and, on 'start', runs its dispatcher until 'stop'. Posts 'ready' once open, and its successes
 * once stopped and closed.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { pgStack } from './pg-stack.js'

const { url, poolMax } = workerData as { url: string; poolMax?: number }
const pb = await pgStack(url, poolMax)
const port = parentPort!
port.on('message', (m: string) => {
  if (m === 'start') pb.dispatcher.start()
  if (m === 'stop') {
    void pb.close().then(() => port.postMessage({ successes: pb.successes() }))
  }
})
port.postMessage('ready')
