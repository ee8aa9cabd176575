/**
 * Startup benchmark: `node dist/src/cli.js serve` on an empty data directory, timed from the
 * spawn until `/healthz` answers 200, and its resident memory once idle. The child gets a small
 * preload (`--import`, a data: URL) that answers one IPC message with process.memoryUsage(),
 * V8's heap and code statistics and the CommonJS modules loaded, so the report says what the
 * remaining memory is; the preload itself costs well under 1 MB.
 *
 * Its baseline: bench/stack-server.ts, the libraries the server is built on with one route and no
 * Postbox code, started and measured the same way.
 *
 * Also: what each heavy dependency costs to import on its own (a fresh `node` per package, RSS
 * and wall time of the import), to show which ones the idle server avoids loading.
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Figure } from './figures.js'

const ROUNDS = 5
/** How long the settled start stays idle before its RSS is read. */
const SETTLED_IDLE_MS = 12_000
const KEY = 'pbk_' + 'c'.repeat(43)
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CLI = join(ROOT, 'dist/src/cli.js')
/** The libraries alone, no Postbox code (bench/stack-server.ts): the idle RSS baseline. */
const STACK = join(ROOT, 'dist/bench/stack-server.js')

/** Answers `{ probe: true }` with the process's memory figures and its loaded CommonJS files. */
const PRELOAD = `
import { createRequire } from 'node:module'
import v8 from 'node:v8'
const require = createRequire('/')
process.on('message', (m) => {
  if (!m || !m.probe) return
  globalThis.gc?.()
  const heap = v8.getHeapStatistics()
  const code = v8.getHeapCodeStatistics()
  process.send({ mem: process.memoryUsage(), heap, code, cjs: Object.keys(require.cache) })
})
`
const PRELOAD_URL = `data:text/javascript,${encodeURIComponent(PRELOAD)}`

/** What the child reported about its memory. */
interface Probe {
  mem: NodeJS.MemoryUsage
  heap: { used_heap_size: number; total_heap_size: number }
  code: { code_and_metadata_size: number; bytecode_and_metadata_size: number; external_script_source_size: number }
  cjs: string[]
}

const mb = (b: number): string => `${(b / 1048576).toFixed(1)} MB`

/** Resident set of a process from /proc/<pid>/status (VmRSS, and its anonymous and file-backed parts), in bytes. */
function rssOf(pid: number): { rss: number; anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (k: string): number => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) * 1024
  return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') }
}

/** CPU ms a process has used (utime + stime from /proc/<pid>/stat, 10 ms ticks). */
function cpuMsOf(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(f[11]) + Number(f[12])) * 10
}

/** One start: ms from spawn to the first 200 on /healthz, then RSS after `idleMs` idle and the probe. */
async function oneStart(dir: string, port: number, esmDebug = false, cli = CLI, idleMs = 1000): Promise<Start> {
  const t0 = performance.now()
  const child = spawn(process.execPath, ['--expose-gc', '--import', PRELOAD_URL, cli, 'serve'], {
    env: { ...process.env, POSTBOX_DATA_DIR: dir, POSTBOX_PORT: String(port), POSTBOX_ADMIN_KEY: KEY, POSTBOX_LOG_LEVEL: 'warn', ...(esmDebug ? { NODE_DEBUG: 'esm' } : {}) },
    stdio: ['ignore', 'ignore', esmDebug ? 'pipe' : 'inherit', 'ipc'],
  })
  const esm = new Set<string>()
  let tail = ''
  child.stderr?.on('data', (c: Buffer) => {
    const lines = (tail + c.toString()).split('\n')
    tail = lines.pop()!
    for (const l of lines) {
      const m = / Storing (file:\/\/\S+)/.exec(l)
      if (m) esm.add(m[1]!)
    }
  })
  try {
    let ms = NaN
    let cpuMs = NaN
    for (;;) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`)
        await res.arrayBuffer()
        if (res.status === 200) {
          ms = performance.now() - t0
          cpuMs = cpuMsOf(child.pid!)
          break
        }
      } catch {
        // not listening yet
      }
      if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode}`)
      if (performance.now() - t0 > 20_000) throw new Error('serve did not answer /healthz within 20 s')
      await new Promise((r) => setTimeout(r, 2))
    }
    await new Promise((r) => setTimeout(r, idleMs))
    const probe = await new Promise<Probe>((resolve) => {
      child.once('message', (m) => resolve(m as Probe))
      child.send({ probe: true })
    })
    await new Promise((r) => setTimeout(r, 100))
    return { ms, cpuMs, ...rssOf(child.pid!), probe, esm: [...esm] }
  } finally {
    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGTERM')
    await exited
  }
}

interface Start {
  ms: number
  cpuMs: number
  rss: number
  anon: number
  file: number
  probe: Probe
  esm: string[]
}

/** Packages whose import cost the table shows; the idle server should load only the first group. */
const PACKAGES: [string, string][] = [
  ['better-sqlite3', "await import('better-sqlite3')"],
  ['hono + @hono/zod-openapi', "await import('@hono/zod-openapi')"],
  ['zod', "await import('zod')"],
  ['pino', "await import('pino')"],
  ['prom-client', "await import('prom-client')"],
  ['undici', "await import('undici')"],
  ['liquidjs', "await import('liquidjs')"],
  ['nodemailer', "await import('nodemailer')"],
  ['marked', "await import('marked')"],
  ['ajv', "await import('ajv')"],
]

/** RSS and ms one import adds to a fresh `node` (median of 3). */
function importCost(code: string): { ms: number; rss: number } {
  const script = `const r0 = process.memoryUsage().rss; const t0 = performance.now(); ${code}; const ms = performance.now() - t0; globalThis.gc(); console.log(JSON.stringify({ ms, rss: process.memoryUsage().rss - r0 }))`
  const runs = Array.from({ length: 3 }, () => {
    const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' })
    if (r.status !== 0) throw new Error(r.stderr)
    return JSON.parse(r.stdout) as { ms: number; rss: number }
  })
  const med = <K extends 'ms' | 'rss'>(k: K): number => runs.map((r) => r[k]).sort((a, b) => a - b)[1]!
  return { ms: med('ms'), rss: med('rss') }
}

/** Which package a loaded file belongs to (`node_modules/<pkg>`), or `postbox` for our own. */
function packageOf(file: string): string {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)
  return m ? m[1]! : 'postbox'
}

/**
 * The modules inside the loaded files, by package, read from their source maps: a file of the
 * server bundle (docs/architecture.md, "Build") holds many; a file tsc wrote holds one.
 */
function modulesInside(files: readonly string[]): Map<string, number> {
  const inside = new Map<string, number>()
  for (const f of files) {
    let sources: string[] = [f]
    if (f.startsWith(join(ROOT, 'dist')) && existsSync(`${f}.map`)) {
      sources = (JSON.parse(readFileSync(`${f}.map`, 'utf8')) as { sources: string[] }).sources
    }
    for (const src of sources) inside.set(packageOf(src), (inside.get(packageOf(src)) ?? 0) + 1)
  }
  return inside
}

/** Runs the startup benchmark and prints start time, idle RSS and what it is made of. */
export async function run(): Promise<Figure[]> {
  const starts: Start[] = []
  const startIn = async (esmDebug: boolean, cli = CLI, idleMs?: number): Promise<Start> => {
    const dir = mkdtempSync(join(tmpdir(), 'postbox-bench-start-'))
    try {
      return await oneStart(dir, 20_000 + Math.floor(Math.random() * 20_000), esmDebug, cli, idleMs)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
  // BENCH_BASE_CLI=<another build's dist/src/cli.js>: its starts alternate with these, for a
  // before/after of the same run.
  const base = process.env.BENCH_BASE_CLI
  const before: Start[] = []
  const stack: Start[] = []
  for (let i = 0; i < ROUNDS; i++) {
    starts.push(await startIn(false))
    if (base) before.push(await startIn(false, base))
    stack.push(await startIn(false, STACK))
  }
  // One more start logs the ES modules it loads (NODE_DEBUG=esm slows it; not counted above).
  const listed = await startIn(true)
  // One more stays idle long enough for V8's memory reducer (it runs ~8 s after the last
  // collection and gives back the heap pages start-up left committed): the idle footprint a
  // running server settles at, reported beside the figure 1 s after start.
  const settled = await startIn(false, CLI, SETTLED_IDLE_MS)
  const mid = Math.floor(ROUNDS / 2)
  const med = <K extends 'ms' | 'cpuMs' | 'rss'>(k: K): number => starts.map((s) => s[k]).sort((a, b) => a - b)[mid]!
  const byRss = [...starts].sort((a, b) => a.rss - b.rss)
  const m = byRss[mid]!
  const p = m.probe
  console.log(`node dist/src/cli.js serve on an empty data directory, ${ROUNDS} starts, median (min)`)
  console.log(`| measure | median | min | target |`)
  console.log(`| --- | ---: | ---: | --- |`)
  console.log(`| spawn → /healthz 200 | ${med('ms').toFixed(0)} ms | ${Math.min(...starts.map((s) => s.ms)).toFixed(0)} ms | <= 300 ms |`)
  console.log(`| … CPU the server used until then | ${med('cpuMs').toFixed(0)} ms | ${Math.min(...starts.map((s) => s.cpuMs)).toFixed(0)} ms | |`)
  console.log(`| idle RSS 1 s after start | ${mb(m.rss)} | ${mb(byRss[0]!.rss)} | <= 60 MB |`)
  if (base) {
    const bm = <K extends 'ms' | 'cpuMs' | 'rss'>(k: K): number => before.map((s) => s[k]).sort((a, b) => a - b)[mid]!
    console.log(`| before: ${base}, spawn → /healthz 200 | ${bm('ms').toFixed(0)} ms | ${Math.min(...before.map((s) => s.ms)).toFixed(0)} ms | |`)
    console.log(`| before: CPU until then | ${bm('cpuMs').toFixed(0)} ms | ${Math.min(...before.map((s) => s.cpuMs)).toFixed(0)} ms | |`)
    console.log(`| before: idle RSS | ${mb(bm('rss'))} | ${mb(Math.min(...before.map((s) => s.rss)))} | |`)
  }
  console.log(`| idle RSS ${SETTLED_IDLE_MS / 1000} s after start (one start; V8's memory reducer has run) | ${mb(settled.rss)} | | |`)
  const st = [...stack].sort((a, b) => a.rss - b.rss)[mid]!
  console.log(`| the stack alone, 1 s after start: better-sqlite3 (WAL file), @hono/zod-openapi on @hono/node-server, pino, one route | ${mb(st.rss)} | ${mb(Math.min(...stack.map((s) => s.rss)))} | |`)
  console.log(`idle memory of the median start: RSS ${mb(m.rss)} = file-backed ${mb(m.file)} (the node binary's pages, libc, better-sqlite3's .node; shared with every node process) + anonymous ${mb(m.anon)}.`)
  console.log(`  the stack alone: file-backed ${mb(st.file)} + anonymous ${mb(st.anon)}; V8 heap ${mb(st.probe.heap.total_heap_size)} committed, ${mb(st.probe.mem.heapUsed)} used. The server's RSS above it: ${mb(m.rss - st.rss)} (the baseline is not bundled; the server bundles and code-caches the same libraries).`)
  console.log(`  V8 heap ${mb(p.heap.total_heap_size)} committed, ${mb(p.mem.heapUsed)} used after a GC (of it code ${mb(p.code.code_and_metadata_size)}, bytecode ${mb(p.code.bytecode_and_metadata_size)}); external ${mb(p.mem.external)} (array buffers ${mb(p.mem.arrayBuffers)}); the rest of the anonymous memory is malloc (SQLite's page cache, ICU, libuv) and thread stacks.`)
  const pkgs = new Map<string, number>()
  const loaded = [...p.cjs, ...listed.esm.map((u) => fileURLToPath(u))]
  for (const f of loaded) pkgs.set(packageOf(f), (pkgs.get(packageOf(f)) ?? 0) + 1)
  const byCount = (m: Map<string, number>): string => [...m].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ')
  const sp = settled.probe
  console.log(`  ${SETTLED_IDLE_MS / 1000} s after start: RSS ${mb(settled.rss)} = file-backed ${mb(settled.file)} + anonymous ${mb(settled.anon)}; V8 heap ${mb(sp.heap.total_heap_size)} committed, ${mb(sp.mem.heapUsed)} used.`)
  console.log(`files loaded at idle (CommonJS and ES), ${loaded.length}, by package: ${byCount(pkgs)}`)
  const bundled = modulesInside(loaded.filter((f) => packageOf(f) === 'postbox'))
  console.log(`  inside Postbox's ${pkgs.get('postbox') ?? 0} files, modules by package (source maps): ${byCount(bundled)}`)
  console.log('| package, imported alone in a fresh node | ms | RSS added | loaded by the idle server |')
  console.log('| --- | ---: | ---: | --- |')
  for (const [name, code] of PACKAGES) {
    const c = importCost(code)
    const first = name.split(' ')[0]!
    console.log(`| ${name} | ${c.ms.toFixed(0)} | ${mb(c.rss)} | ${pkgs.has(first) ? 'yes' : bundled.has(first) ? 'yes, bundled' : 'no'} |`)
  }
  return [
    { measure: 'start to /healthz 200 (median of 5)', value: `${med('ms').toFixed(0)} ms (server CPU ${med('cpuMs').toFixed(0)} ms)`, target: '<= 300 ms', met: med('ms') <= 300 },
    { measure: 'idle RSS, empty database (median of 5)', value: `${mb(m.rss)} (file-backed ${mb(m.file)}, anonymous ${mb(m.anon)}; heap used ${mb(p.mem.heapUsed)})`, target: '<= 60 MB', met: m.rss <= 60 * 1048576 },
    { measure: 'idle RSS of the stack alone, no Postbox code (median of 5)', value: `${mb(st.rss)} (file-backed ${mb(st.file)}, anonymous ${mb(st.anon)}); the server ${mb(m.rss - st.rss)} above it`, target: '(report)', met: null },
  ]
}
