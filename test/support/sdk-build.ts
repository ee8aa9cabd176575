import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { buildOnce, isNewer, newestMtime } from './build-once.js'
import { ROOT } from './server-process.js'

/** The built inbox element the server serves at /sdk/inbox.js. */
export const INBOX_JS = join(ROOT, 'dist', 'sdk', 'inbox.js')

/**
 * Builds dist/sdk/inbox.js (vite, library mode) when it is missing or older than sdk/; a lock
 * directory keeps parallel test files from building at the same time.
 */
export async function ensureSdkBuilt(): Promise<void> {
  await buildOnce({
    lock: 'postbox-sdk-build.lock',
    what: 'the sdk build lock',
    waitMs: 120_000,
    staleMs: 90_000,
    isFresh: () => isNewer(INBOX_JS, newestMtime(join(ROOT, 'sdk'), (name) => name.endsWith('.ts'))),
    build: () => {
      const r = spawnSync('npx', ['vite', 'build', '--config', 'sdk/vite.config.ts'], { cwd: ROOT, encoding: 'utf8' })
      if (r.status !== 0 || !existsSync(INBOX_JS)) throw new Error(`vite build of the inbox element failed:\n${r.stdout}\n${r.stderr}`)
    },
  })
}
