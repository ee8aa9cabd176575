import { execFile } from 'node:child_process'
import { chownSync, chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

/**
 * A private PostgreSQL server that a test controls: it can restart it (fast or immediate) and
 * stop it, which the shared server of scripts/with-postgres.sh must never be. It uses the same
 * binaries that script finds (the newest /usr/lib/postgresql/<v>/bin, else pg_ctl on PATH), runs
 * them as the `postgres` user when we are root (the server refuses root), and listens only on
 * 127.0.0.1, on a port free when it was chosen (kept across restarts).
 */

const run = promisify(execFile)

/** The directory holding initdb, pg_ctl and postgres, or undefined when none is installed. */
export function findPgBinDir(): string | undefined {
  const root = '/usr/lib/postgresql'
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a))
    for (const v of versions) {
      const dir = join(root, v, 'bin')
      if (['postgres', 'initdb', 'pg_ctl'].every((b) => existsSync(join(dir, b)))) return dir
    }
  }
  for (const dir of (process.env.PATH ?? '').split(':')) if (dir && existsSync(join(dir, 'pg_ctl')) && existsSync(join(dir, 'initdb'))) return dir
  return undefined
}

/** How pg_ctl stops the server: `fast` (clients disconnected, clean shutdown) or `immediate` (no shutdown, recovery at the next start). */
export type StopMode = 'fast' | 'immediate'

/** A running private server. */
export interface PgCluster {
  /** postgres://postgres@127.0.0.1:<port>/postgres (trust authentication). */
  readonly url: string
  readonly port: number
  /** Stops the server with `mode` and waits until it is down. */
  stop(mode: StopMode): Promise<void>
  /** Starts the stopped server on the same port and waits until it accepts connections. */
  start(): Promise<void>
  /** `pg_ctl restart -m <mode>`: resolves once the server accepts connections again. */
  restart(mode: StopMode): Promise<void>
  /** Stops the server (if running) and removes its directory. */
  destroy(): Promise<void>
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number }
      s.close(() => resolve(port))
    })
  })

/** Creates a cluster in a temporary directory and starts it; throws (with the server log) if it cannot. */
export async function startPgCluster(): Promise<PgCluster> {
  const bin = findPgBinDir()
  if (!bin) throw new Error('no PostgreSQL server binaries (initdb, pg_ctl) found; scripts/with-postgres.sh installs them')
  const root = process.getuid?.() === 0
  const dir = mkdtempSync(join(tmpdir(), 'postbox-pgc-'))
  chmodSync(dir, 0o755)
  if (root) {
    const { stdout } = await run('id', ['-u', 'postgres'])
    const { stdout: gid } = await run('id', ['-g', 'postgres'])
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()))
  }
  const data = join(dir, 'data')
  const log = join(dir, 'server.log')
  const pgRun = (tool: string, args: string[]) => (root ? run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]) : run(join(bin, tool), args))
  await pgRun('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C'])
  const port = await freePort()
  const opts = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c max_connections=100 -c fsync=off -c full_page_writes=off`
  let running = false
  const withLog = async <T>(what: string, p: Promise<T>): Promise<T> => {
    try {
      return await p
    } catch (err) {
      const text = existsSync(log) ? readFileSync(log, 'utf8').slice(-4000) : ''
      throw new Error(`${what} failed: ${String(err)}\n${text}`)
    }
  }
  const start = async (): Promise<void> => {
    await withLog('pg_ctl start', pgRun('pg_ctl', ['-D', data, '-l', log, '-w', '-t', '60', '-o', opts, 'start']))
    running = true
  }
  await start()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async stop(mode) {
      await withLog('pg_ctl stop', pgRun('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']))
      running = false
    },
    start,
    async restart(mode) {
      await withLog('pg_ctl restart', pgRun('pg_ctl', ['-D', data, '-l', log, '-m', mode, '-w', '-t', '60', '-o', opts, 'restart']))
      running = true
    },
    async destroy() {
      if (running) await pgRun('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {})
      running = false
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
