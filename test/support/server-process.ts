import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildOnce, newestMtime } from './build-once.js'

/**
 * Runs the real program (`node dist/src/cli.js …`) as child processes for the crash, fault
 * and secrets suites. Every child is registered and `killAllChildren()` (called from afterAll,
 * and on process exit as a last resort) SIGKILLs whatever is still running.
 */

/** The repository root. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
/** The compiled CLI. */
export const CLI = join(ROOT, 'dist', 'src', 'cli.js')

const children = new Set<ChildProcess>()
process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL')
})

/** SIGKILLs every child this module started that is still alive. */
export async function killAllChildren(): Promise<void> {
  await Promise.all([...children].map((c) => killChild(c, 'SIGKILL')))
}

/** Sends `signal` to `child` and resolves once it has exited. */
export function killChild(child: ChildProcess, signal: NodeJS.Signals): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode)
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code))
    child.kill(signal)
  })
}

/** The build step after tsc that rewrites dist/src/cli.js as a bundle (docs/architecture.md, "Build"). */
const BUNDLE_SCRIPT = join(ROOT, 'scripts', 'bundle-server.ts')

function distIsFresh(): boolean {
  if (!existsSync(CLI)) return false
  const built = statSync(CLI).mtimeMs
  const newestSource = newestMtime(join(ROOT, 'src'), (name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))
  return newestSource < built && statSync(join(ROOT, 'schema.sql')).mtimeMs < built && statSync(BUNDLE_SCRIPT).mtimeMs < built
}

/**
 * Builds dist/ once per change of src/ as `npm run build` does (tsc, then the server bundle): a
 * lock directory keeps parallel test files from building at the same time, and a build newer
 * than every source file is reused.
 */
export async function ensureBuilt(): Promise<void> {
  await buildOnce({
    lock: 'postbox-test-build.lock',
    what: 'the build lock',
    waitMs: 170_000,
    staleMs: 120_000,
    isFresh: distIsFresh,
    build: () => {
      const r = spawnSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, encoding: 'utf8' })
      // tsc still emits when another engineer's file has a type error; only a missing CLI is fatal.
      if (!existsSync(CLI)) throw new Error(`npm run build produced no ${CLI}:\n${r.stdout}\n${r.stderr}`)
      const b = spawnSync(process.execPath, [join(ROOT, 'dist', 'scripts', 'bundle-server.js')], { cwd: ROOT, encoding: 'utf8' })
      if (b.status !== 0) throw new Error(`the server bundle failed (node dist/scripts/bundle-server.js):\n${b.stdout}\n${b.stderr}`)
    },
  })
}

/** A fresh admin key in the documented `pbk_` format. */
export function newAdminKey(): string {
  return `pbk_${randomBytes(32).toString('base64url')}`
}

/** The environment every test server gets, on top of the caller's. */
export function serverEnv(dataDir: string, adminKey: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    POSTBOX_PORT: '0',
    POSTBOX_HOST: '127.0.0.1',
    POSTBOX_DATA_DIR: dataDir,
    POSTBOX_ADMIN_KEY: adminKey,
    POSTBOX_ALLOW_NETWORKS: '127.0.0.0/8',
    POSTBOX_LOG_LEVEL: 'info',
    ...extra,
  }
}

/** A running `postbox serve` child. */
export interface ServerProcess {
  readonly child: ChildProcess
  readonly port: number
  readonly baseUrl: string
  /** Everything the child wrote to stdout and stderr so far. */
  output(): string
  /** SIGKILL; resolves when the process is gone. */
  kill(): Promise<void>
  /** SIGTERM and wait for exit; returns the exit code. */
  stop(): Promise<number | null>
}

function portFromLine(line: string): number | null {
  try {
    const obj = JSON.parse(line) as Record<string, unknown>
    for (const key of ['port', 'listening_port']) if (typeof obj[key] === 'number' && (obj[key] as number) > 0) return obj[key] as number
    for (const key of ['url', 'address', 'listening', 'msg']) {
      const v = obj[key]
      if (typeof v === 'string') {
        const m = /(?:127\.0\.0\.1|localhost|\]):(\d{2,5})/.exec(v)
        if (m) return Number(m[1])
      }
    }
  } catch {}
  return null
}

/** Starts `node dist/src/cli.js serve` with `env` and resolves once it answers /healthz. */
export async function startServer(env: Record<string, string>, timeoutMs = 15_000): Promise<ServerProcess> {
  const child = spawn(process.execPath, [CLI, 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  child.once('exit', () => children.delete(child))
  let out = ''
  let port: number | null = null
  let pending = ''
  child.stdout!.on('data', (b: Buffer) => {
    const text = b.toString('utf8')
    out += text
    pending += text
    let nl: number
    while ((nl = pending.indexOf('\n')) !== -1) {
      const line = pending.slice(0, nl)
      pending = pending.slice(nl + 1)
      port ??= portFromLine(line)
    }
  })
  child.stderr!.on('data', (b: Buffer) => {
    out += b.toString('utf8')
  })
  const deadline = Date.now() + timeoutMs
  while (port === null) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`server exited (${child.exitCode ?? child.signalCode}) before listening:\n${out}`)
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`server did not log its port within ${timeoutMs} ms:\n${out}`)
    }
    await new Promise((r) => setTimeout(r, 20))
  }
  const baseUrl = `http://127.0.0.1:${port}`
  for (;;) {
    try {
      if ((await fetch(`${baseUrl}/healthz`)).ok) break
    } catch {}
    if (Date.now() > deadline) throw new Error(`server did not answer /healthz:\n${out}`)
    await new Promise((r) => setTimeout(r, 20))
  }
  return {
    child,
    port,
    baseUrl,
    output: () => out,
    kill: async () => void (await killChild(child, 'SIGKILL')),
    stop: () => killChild(child, 'SIGTERM'),
  }
}

/** Runs the CLI to completion (`node dist/src/cli.js …args`) and returns its exit code and output. */
export function runCli(args: string[], env: Record<string, string>, timeoutMs = 20_000): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  let out = ''
  child.stdout!.on('data', (b: Buffer) => (out += b.toString('utf8')))
  child.stderr!.on('data', (b: Buffer) => (out += b.toString('utf8')))
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.once('exit', (code) => {
      clearTimeout(timer)
      children.delete(child)
      resolve({ code, output: out })
    })
  })
}

/** Starts the CLI without waiting (`serve` that will be killed mid-start, `backup` mid-copy). */
export function spawnCli(args: string[], env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  child.once('exit', () => children.delete(child))
  child.stdout!.resume()
  child.stderr!.resume()
  return child
}

/** A parsed JSON answer; `json` is loosely typed on purpose (tests poke at arbitrary fields). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Answer = { status: number; json: any; text: string }

/** A small JSON client for a server: `call(method, path, body?, key?)`. */
export function apiClient(baseUrl: () => string, key: string) {
  return async function call(method: string, path: string, body?: unknown, auth: string | null = key): Promise<Answer> {
    const headers: Record<string, string> = {}
    if (auth !== null) headers.authorization = `Bearer ${auth}`
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await fetch(`${baseUrl()}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    const text = await res.text()
    let json: Answer['json'] = null
    try {
      json = JSON.parse(text)
    } catch {}
    return { status: res.status, json, text }
  }
}
