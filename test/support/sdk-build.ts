import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { ROOT } from './server-process.js'

/** The built inbox element the server serves at /sdk/inbox.js. */
export const INBOX_JS = join(ROOT, 'dist', 'sdk', 'inbox.js')

function newestSource(dir: string): number {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name)
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(p))
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(p).mtimeMs)
  }
  return newest
}

/**
 * Builds dist/sdk/inbox.js (vite, library mode) when it is missing or older than sdk/; a lock
 * directory keeps parallel test files from building at the same time.
 */
export async function ensureSdkBuilt(): Promise<void> {
  const lock = join(ROOT, 'node_modules', '.cache', 'postbox-sdk-build.lock')
  mkdirSync(dirname(lock), { recursive: true })
  const deadline = Date.now() + 120_000
  for (;;) {
    try {
      mkdirSync(lock)
      break
    } catch {
      try {
        if (Date.now() - statSync(lock).mtimeMs > 90_000) rmSync(lock, { recursive: true, force: true })
      } catch {}
      if (Date.now() > deadline) throw new Error('timed out waiting for the sdk build lock')
      await new Promise((r) => setTimeout(r, 200))
    }
  }
  try {
    if (existsSync(INBOX_JS) && statSync(INBOX_JS).mtimeMs > newestSource(join(ROOT, 'sdk'))) return
    const r = spawnSync('npx', ['vite', 'build', '--config', 'sdk/vite.config.ts'], { cwd: ROOT, encoding: 'utf8' })
    if (r.status !== 0 || !existsSync(INBOX_JS)) throw new Error(`vite build of the inbox element failed:\n${r.stdout}\n${r.stderr}`)
  } finally {
    rmSync(lock, { recursive: true, force: true })
  }
}
