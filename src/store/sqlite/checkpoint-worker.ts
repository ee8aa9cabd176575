/**
 * The checkpoint worker (see checkpointer.ts): a second connection in a worker thread that
 * checkpoints the WAL in PASSIVE mode every `intervalMs`, so the writer never stalls on one.
 * It imports only Node built-ins: better-sqlite3 is loaded from the path the parent resolved,
 * so the same module runs from dist/ and, transpiled, from a data: URL under the test runner.
 */
import { createRequire } from 'node:module'
import { parentPort, workerData } from 'node:worker_threads'

/** What the parent passes in `workerData`. */
export interface CheckpointWorkerData {
  /** The resolved path of better-sqlite3's entry point. */
  driver: string
  /** The database file. */
  path: string
  intervalMs: number
}

/** A message from the worker: ready once the file is open, then errors. */
export type CheckpointWorkerMessage = { ready: true } | { error: string }

/** The part of a better-sqlite3 connection the worker uses. */
interface Connection {
  pragma(source: string): unknown
  close(): void
}

type DatabaseConstructor = new (path: string, opts: { fileMustExist: boolean }) => Connection

const data = workerData as CheckpointWorkerData
const port = parentPort!
const post = (m: CheckpointWorkerMessage): void => port.postMessage(m)

const Database = createRequire(data.driver)(data.driver) as DatabaseConstructor
const db = new Database(data.path, { fileMustExist: true })
// busy_timeout 0: a PASSIVE checkpoint never waits; a busy one is simply tried again at the next tick.
db.pragma('busy_timeout = 0')
post({ ready: true })

const checkpoint = (): void => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)')
  } catch (err) {
    post({ error: err instanceof Error ? err.message : String(err) })
  }
}

const timer = setInterval(checkpoint, data.intervalMs)
port.on('message', (m: unknown) => {
  if (m !== 'stop') return
  clearInterval(timer)
  checkpoint()
  db.close()
  port.close()
})
