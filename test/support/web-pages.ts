import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { createApiKey } from '../../src/api/auth.js'
import { silentLogger } from '../../src/log.js'
import { Postbox, type PostboxOptions } from '../../src/postbox.js'
import { listen, type RunningServer } from '../../src/server.js'
import { tempDir } from '../helpers.js'
import { buildOnce, isNewer, newestMtime } from './build-once.js'
import { ROOT } from './server-process.js'

/**
 * Support for the browser tests of the console and the portal: the built pages (built here when
 * web/ is newer than dist/web), a real server on 127.0.0.1, Debian's chromium, and axe-core.
 */

/** The built pages. */
export const WEB_DIST = join(ROOT, 'dist', 'web')
const require = createRequire(import.meta.url)

/** Builds dist/web once per change of web/ (a lock directory keeps parallel files from building twice). */
export async function ensureWebBuilt(): Promise<void> {
  await buildOnce({
    lock: 'postbox-web-build.lock',
    what: 'the web build lock',
    waitMs: 120_000,
    isFresh: () => isNewer(join(WEB_DIST, 'console.html'), newestMtime(join(ROOT, 'web'))),
    build: () => {
      const r = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--config', 'web/vite.config.ts', '--logLevel', 'warn'], { cwd: ROOT, encoding: 'utf8' })
      if (r.status !== 0) throw new Error(`vite build failed:\n${r.stdout}\n${r.stderr}`)
    },
  })
}

/** The flags of a headless chromium that talks to nothing but 127.0.0.1. */
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run']

/** Debian's chromium, headless (never a downloaded browser). */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS, timeout: 30_000 })
}

/** A Postbox serving HTTP on 127.0.0.1 (an ephemeral port), with an admin and a viewer key. */
export interface WebServer {
  readonly pb: Postbox
  readonly url: string
  readonly adminKey: string
  readonly viewerKey: string
  close(): Promise<void>
}

/** An admin key in the documented format, fixed so a failing test can be replayed. */
export const WEB_ADMIN_KEY = 'pbk_' + 'W'.repeat(43)

/** Opens a Postbox in a temp dir and listens with the real server (src/server.ts). */
export async function startWebServer(opts: Partial<PostboxOptions> = {}): Promise<WebServer> {
  const { dir, cleanup } = tempDir('postbox-web-')
  const pb = await Postbox.open({ dataDir: dir, adminKey: WEB_ADMIN_KEY, allowNetworks: ['127.0.0.0/8'], port: 0, host: '127.0.0.1', log: silentLogger(), ...opts })
  let server: RunningServer
  try {
    server = await listen(pb, silentLogger())
  } catch (err) {
    await pb.close()
    cleanup()
    throw err
  }
  pb.start()
  const viewerKey = (await createApiKey(pb.store, { name: 'dashboard', role: 'viewer' }, Date.now())).key
  return {
    pb,
    url: `http://127.0.0.1:${server.port}`,
    adminKey: WEB_ADMIN_KEY,
    viewerKey,
    async close() {
      await server.close()
      cleanup()
    },
  }
}

const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8')

/** One axe-core violation, as the tests report it. */
export interface Violation {
  id: string
  impact: string | null
  help: string
  nodes: string[]
}

/**
 * Runs axe-core (WCAG 2.x A and AA rules) in the page and returns the serious and critical
 * violations. The script is evaluated through the DevTools protocol, which the page's CSP does
 * not govern; the page itself still runs no inline script.
 */
export async function seriousViolations(page: Page): Promise<Violation[]> {
  await page.evaluate(AXE_SOURCE)
  const result = (await page.evaluate(`(async () => {
    const r = await window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) }))
  })()`)) as Violation[]
  return result.filter((v) => v.impact === 'serious' || v.impact === 'critical')
}
