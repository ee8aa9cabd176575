import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Build-once-per-change for the test suites (dist/src, dist/sdk/inbox.js, dist/web): a lock
 * directory under node_modules/.cache keeps parallel test files from building at the same
 * time, and an output newer than every source file is reused.
 */

/** The newest modification time (ms) of the files under `dir` that `include` accepts (every file when omitted). */
export function newestMtime(dir: string, include: (name: string) => boolean = () => true): number {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name)
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(p, include))
    else if (include(entry.name)) newest = Math.max(newest, statSync(p).mtimeMs)
  }
  return newest
}

/** Where the lock directories live (node_modules/.cache of the repository). */
const CACHE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'node_modules', '.cache')

/** True when `output` exists and is newer than `sourceMtime`. */
export function isNewer(output: string, sourceMtime: number): boolean {
  return existsSync(output) && statSync(output).mtimeMs > sourceMtime
}

/** How one output is built: its lock's name, how long to wait, when it is fresh, and the build itself. */
export interface BuildOnce {
  /** The lock directory's name under node_modules/.cache. */
  lock: string
  /** What the lock guards, for the timeout error ("the build lock"). */
  what: string
  /** Give up waiting for the lock after this many ms. */
  waitMs: number
  /** A lock older than this many ms is taken for a crashed holder's and removed; never when omitted. */
  staleMs?: number
  /** True when the output is newer than its sources (checked under the lock). */
  isFresh: () => boolean
  /** Builds the output; throws when it failed. */
  build: () => void
}

/** Runs `spec.build()` under the lock unless `spec.isFresh()`. */
export async function buildOnce(spec: BuildOnce): Promise<void> {
  const lock = join(CACHE, spec.lock)
  mkdirSync(dirname(lock), { recursive: true })
  const deadline = Date.now() + spec.waitMs
  for (;;) {
    try {
      mkdirSync(lock)
      break
    } catch {
      if (spec.staleMs !== undefined) {
        try {
          if (Date.now() - statSync(lock).mtimeMs > spec.staleMs) rmSync(lock, { recursive: true, force: true })
        } catch {}
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${spec.what}`)
      await new Promise((r) => setTimeout(r, 200))
    }
  }
  try {
    if (spec.isFresh()) return
    spec.build()
  } finally {
    rmSync(lock, { recursive: true, force: true })
  }
}
