import type { Log } from '../../log.js'
import { startCheckpointer, type Checkpointer } from './checkpointer.js'
import type { SqliteStore } from './index.js'

/** How often the writer's row changes are sampled. */
export const DEMAND_POLL_MS = 1_000
/** Row changes within one poll past which the background checkpointer starts (an idle server makes ~1 per 5 s: the delivery lease's renewal). */
export const DEMAND_CHANGES = 100

const TOTAL_CHANGES = 'SELECT total_changes() AS n'

/**
 * The background checkpointer, started only once the writer is busy. A worker thread holds its
 * own V8 heap and SQLite connection (~12 MB of RSS); an idle server, or one that writes a few
 * rows a second, does not need it: until it starts, the writer checkpoints for itself as SQLite
 * does by default (every WAL_AUTOCHECKPOINT_PAGES pages), which is what the checkpointer falls
 * back to anyway. Once started it runs until `stop()` (docs/performance.md).
 */
export function startCheckpointerOnDemand(store: SqliteStore, log: Log, opts: { pollMs?: number; changes?: number; intervalMs?: number } = {}): Checkpointer {
  const threshold = opts.changes ?? DEMAND_CHANGES
  const count = store.db.prepare(TOTAL_CHANGES)
  const changes = (): number => (count.get() as { n: number }).n
  let started: Checkpointer | null = null
  let last = changes()
  const timer = setInterval(() => {
    if (!store.db.open) return
    const n = changes()
    if (n - last >= threshold) {
      clearInterval(timer)
      started = startCheckpointer(store, log, { intervalMs: opts.intervalMs })
    }
    last = n
  }, opts.pollMs ?? DEMAND_POLL_MS)
  timer.unref()
  return {
    active: () => started?.active() ?? false,
    async stop() {
      clearInterval(timer)
      await started?.stop()
    },
  }
}
