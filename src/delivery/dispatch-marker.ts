import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { processAlive } from '../lib/process.js'

/** Marker files this process holds, by path: a second dispatcher here is not alone either. */
const held = new Set<string>()

/** The result of `claimDispatchMarker`. */
export interface DispatchMarker {
  /** No other dispatcher (in this process or another live one) runs on the database. */
  readonly sole: boolean
  /** Removes the marker if this dispatcher made it. */
  release(): void
}

/** The answer when another dispatcher may be alive (or the marker cannot be written): nothing to release. */
const NOT_SOLE: DispatchMarker = { sole: false, release: () => {} }

/**
 * Decides whether in-flight rows found at start can only belong to a process that died. A
 * marker file next to the database (`<db>-dispatcher.pid`) names the dispatching process; it
 * is created exclusively, and one naming a process that no longer exists is replaced. WAL
 * databases are only shared between processes of one host, so a PID check is meaningful. When
 * in doubt (a reused PID, a second dispatcher) the answer is "not sole": the caller then waits
 * for leases to expire, which is slower after a crash but never sends a request twice.
 */
export function claimDispatchMarker(dbPath: string): DispatchMarker {
  if (dbPath === ':memory:' || dbPath === '') return { sole: true, release: () => {} }
  const file = `${dbPath}-dispatcher.pid`
  if (held.has(file)) return NOT_SOLE
  for (let tries = 0; tries < 3; tries++) {
    try {
      const fd = openSync(file, 'wx', 0o600)
      try {
        writeSync(fd, String(process.pid))
      } finally {
        closeSync(fd)
      }
      held.add(file)
      return {
        sole: true,
        release: () => {
          if (!held.delete(file)) return
          rmSync(file, { force: true })
        },
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return NOT_SOLE
    }
    let pid = NaN
    try {
      pid = Number(readFileSync(file, 'utf8').trim())
    } catch {
      continue // removed meanwhile: try to create it again
    }
    // Our own PID in a marker we do not hold is an earlier process that had it (a container
    // restarted as PID 1 again).
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && processAlive(pid)) return NOT_SOLE
    rmSync(file, { force: true }) // left by a process that died
  }
  return NOT_SOLE
}
