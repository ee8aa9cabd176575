import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import type { CheckpointWorkerData, CheckpointWorkerMessage } from './checkpoint-worker.js'
import type { Log } from '../../log.js'
import { WAL_AUTOCHECKPOINT_PAGES } from './db.js'
import type { SqliteStore } from './index.js'

/** How often the background connection checkpoints the WAL. */
export const CHECKPOINT_INTERVAL_MS = 200
/** WAL size (pages of 4 KiB, so 64 MiB: journal_size_limit) past which the committing connection checkpoints itself (its wal_autocheckpoint while the worker runs), so the WAL starts over. */
export const MAX_WAL_PAGES = 16_384

/** A running background checkpointer. */
export interface Checkpointer {
  /** Stops the worker (after one last checkpoint) and gives checkpoints back to the writer. */
  stop(): Promise<void>
  /** True while the worker runs (once it has the file open, the writer does no checkpoints of its own). */
  active(): boolean
}

/**
 * The worker module, compiled by tsc next to this file. Under the test runner this file is the
 * TypeScript source and there is no compiled worker beside it: the worker's source is then
 * transpiled (typescript, a development dependency) and run from a data: URL, which Node's
 * Worker loads as an ES module.
 */
function workerUrl(): URL {
  if (!import.meta.url.endsWith('.ts')) return new URL('./checkpoint-worker.js', import.meta.url)
  type Ts = typeof import('typescript')
  const ts = createRequire(import.meta.url)('typescript') as Ts
  const source = readFileSync(new URL('./checkpoint-worker.ts', import.meta.url), 'utf8')
  const js = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } }).outputText
  return new URL(`data:text/javascript;base64,${Buffer.from(js).toString('base64')}`)
}

/** The worker's URL, found once per process. */
let workerUrlOnce: URL | null = null

/**
 * Moves WAL checkpoints off the event loop. A checkpoint copies the WAL into the database file
 * and fsyncs it; run by the committing connection (SQLite's default) it stalls whichever
 * commit crosses the threshold, which measured ~15–20% of write-heavy throughput. Here a second
 * connection in a worker thread checkpoints every CHECKPOINT_INTERVAL_MS in PASSIVE mode (it
 * never blocks the writer), and the writer's own automatic checkpoints are turned off once the
 * worker has the file open. If the worker fails, the writer checkpoints for itself again.
 */
export function startCheckpointer(store: SqliteStore, log: Log, opts: { intervalMs?: number; maxWalPages?: number } = {}): Checkpointer {
  const intervalMs = opts.intervalMs ?? CHECKPOINT_INTERVAL_MS
  const maxWalPages = opts.maxWalPages ?? MAX_WAL_PAGES
  const { db } = store
  const restore = (): void => {
    if (db.open) db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`)
  }
  if (store.path === ':memory:' || db.memory || db.readonly) return { stop: async () => {}, active: () => false }
  const driver = createRequire(import.meta.url).resolve('better-sqlite3')
  const workerData: CheckpointWorkerData = { driver, path: store.path, intervalMs }
  const worker = new Worker((workerUrlOnce ??= workerUrl()), { workerData })
  let running = true
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()))
  const fail = (err: unknown): void => {
    if (!running) return
    running = false
    restore()
    log.warn({ err }, 'background checkpoints stopped; the writer checkpoints for itself')
  }
  worker.on('error', fail)
  worker.on('message', (m: CheckpointWorkerMessage) => {
    // The writer keeps its own checkpoints until the worker has the file open: a worker slow to
    // start (a loaded machine) must not leave the WAL growing meanwhile. Then the writer's own
    // threshold moves up to maxWalPages instead of off: under a steady stream of commits the
    // background checkpoint never catches up with the last frame, and SQLite only starts the WAL
    // over once a checkpoint has, so the WAL would grow without bound. Past maxWalPages the
    // committing connection checkpoints once itself (the worker has already copied nearly
    // everything, so only the tail), at that commit, with no message round trip to wait for.
    if ('ready' in m && running && db.open) db.pragma(`wal_autocheckpoint = ${maxWalPages}`)
    if ('error' in m) log.debug({ err: m.error }, 'background checkpoint failed; retrying')
  })
  void exited.then(() => fail(new Error('checkpoint worker exited')))
  // After the listeners: adding a 'message' listener refs the worker's port again, and a
  // forgotten checkpointer must never keep a process alive.
  worker.unref()
  return {
    active: () => running,
    async stop() {
      if (running) {
        running = false
        restore()
        worker.postMessage('stop')
      }
      // Unreferenced so it never keeps a process alive; a caller waiting for it must hold it.
      worker.ref()
      await exited
    },
  }
}
