import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, posix, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { rolldown, RolldownMagicString, type Plugin } from 'rolldown'
import { consolidateSchema, FRESH_SCHEMA_FILE } from '../src/store/sqlite/fresh-schema.js'

/**
 * The build step after tsc (`npm run build`, docs/architecture.md "Build"): bundles the program
 * that dist/src/cli.js runs into CommonJS files in dist/src/chunks/ holding Postbox's own
 * compiled files and the many small ones of the HTTP stack (hono, zod and their helpers), one
 * for the CLI and one for each part it imports dynamically (the server, the PostgreSQL
 * backend…), and rewrites dist/src/cli.js as a small ES module that loads them with the V8 code
 * cache (src/lib/code-cache.ts); then starts the server once so that cache exists. CommonJS
 * because Node 20 has a code cache for scripts only, not for ES modules. An idle server loads
 * 25 files instead of ~400. Packages with native code, worker threads or lazy loading of their
 * own stay external and load from node_modules with require(), never import(): a cached script
 * has no dynamic import on Node 20 without an experimental flag. The rest of dist/ (the library
 * entry dist/src/index.js, the checkpoint worker, the benchmarks) is left as tsc wrote it.
 */

/** The repository root (this file is scripts/bundle-server.ts, or dist/scripts/bundle-server.js once built). */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), import.meta.url.includes('/dist/scripts/') ? '../..' : '..')
/** tsc's output, the bundle's input and where it is written. */
const SRC = join(ROOT, 'dist', 'src')
const CLI = join(SRC, 'cli.js')
/** The first line after the hashbang of a bundled cli.js: a second run without tsc first would bundle the bundle. */
const MARK = '// postbox: bundled by scripts/bundle-server.ts'

/**
 * Packages bundled in: pure JavaScript, many small files each, all needed by the idle server.
 * pino's worker threads (thread-stream) serve only its transports, which Postbox does not use;
 * marked is an ES module only, bundled so that its chunk can be required like the others.
 */
const BUNDLED = [/^hono(\/|$)/, /^zod(\/|$)/, /^ipaddr\.js$/, /^@hono\//, /^@asteasolutions\//, /^pino(-std-serializers)?(\/|$)/, /^thread-stream(\/|$)/, /^@pinojs\//, /^(quick-format-unescaped|sonic-boom|atomic-sleep|on-exit-leak-free|safe-stable-stringify)$/, /^marked$/]

/** Bare specifiers left to Node: built-ins, and every package not in BUNDLED. */
function isExternal(id: string): boolean {
  if (id.startsWith('.') || id.startsWith('/') || id.startsWith('\0')) return false
  if (id.startsWith('node:') || builtinModules.includes(id)) return true
  return !BUNDLED.some((re) => re.test(id))
}

/** Stands in for `import.meta.url` in a bundled file of ours until the chunk it lands in is known. */
const URL_OF = '__postboxModuleUrl'

/**
 * Keeps `import.meta.url` meaning the file it was written in (dist/src/store/sqlite/checkpointer.js finds
 * its worker beside it, dist/src/lib/package-file.js walks up to package.json): each use becomes
 * that file's URL relative to the chunk it is bundled into.
 */
function moduleUrls(): Plugin {
  return {
    name: 'postbox-module-urls',
    // tsc's source maps are read with each file, so the bundle's maps lead back to src/*.ts.
    load(id) {
      if (!id.startsWith(SRC + sep) || !existsSync(`${id}.map`)) return null
      return { code: readFileSync(id, 'utf8'), map: readFileSync(`${id}.map`, 'utf8') }
    },
    transform(code, id) {
      if (!id.startsWith(SRC + sep) || !code.includes('import.meta.url')) return null
      const rel = relative(SRC, id).split(sep).join('/')
      const s = new RolldownMagicString(code)
      s.replaceAll('import.meta.url', `${URL_OF}(${JSON.stringify(rel)})`)
      return { code: s.toString(), map: s.generateMap({ hires: true, source: id }).toString() }
    },
    renderChunk(code, chunk) {
      if (!code.includes(URL_OF)) return null
      const from = posix.dirname(chunk.fileName)
      const s = new RolldownMagicString(code)
      s.replaceAll(new RegExp(`${URL_OF}\\(("[^"]+")\\)`, 'g'), (_m: string, file: string) => {
        let rel = posix.relative(from, JSON.parse(file) as string)
        if (!rel.startsWith('.')) rel = `./${rel}`
        return `new URL(${JSON.stringify(rel)}, require("node:url").pathToFileURL(__filename)).href`
      })
      return { code: s.toString(), map: s.generateMap({ hires: true }).toString() }
    },
  }
}

/** Bundles what dist/src/cli.js runs and rewrites it; returns the files written and the packages bundled in. */
export async function bundleServer(): Promise<{ files: string[]; modules: number; packages: string[] }> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run tsc -p tsconfig.build.json first`)
  if (readFileSync(CLI, 'utf8').includes(MARK)) throw new Error(`${CLI} is already a bundle: run tsc -p tsconfig.build.json first`)
  const bundle = await rolldown({
    input: { cli: CLI },
    platform: 'node',
    external: isExternal,
    plugins: [moduleUrls()],
    logLevel: 'warn',
  })
  const packages = new Set<string>()
  let modules = 0
  try {
    rmSync(join(SRC, 'chunks'), { recursive: true, force: true })
    const { output } = await bundle.write({
      dir: SRC,
      format: 'cjs',
      entryFileNames: 'chunks/[name].cjs',
      chunkFileNames: 'chunks/[name]-[hash].cjs',
      // One-byte source: V8 keeps a file with any character above U+00FF as a two-byte string.
      charset: 'ascii',
      comments: { legal: true, annotation: true, jsdoc: false },
      sourcemap: true,
    })
    for (const o of output) {
      if (o.type !== 'chunk') continue
      if (/\bimport\(/.test(o.code)) throw new Error(`${o.fileName} keeps an import() of ${o.dynamicImports.join(', ') || 'a package'}: the code cache cannot run it (bundle the package, or load it with require)`)
      for (const m of o.moduleIds) {
        modules++
        const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(m)
        if (pkg) packages.add(pkg[1]!)
      }
    }
    writeFileSync(CLI, STUB)
    return { files: output.map((o) => o.fileName), modules, packages: [...packages].sort() }
  } finally {
    await bundle.close()
  }
}

/** What dist/src/cli.js becomes: the bundle's entry, loaded with the code cache. */
const STUB = `#!/usr/bin/env node
${MARK}
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { installCodeCache } from './lib/code-cache.js'

installCodeCache(fileURLToPath(new URL('./chunks/', import.meta.url)))
createRequire(import.meta.url)('./chunks/cli.cjs')
`

/**
 * Starts the bundled server once on a temporary data directory and stops it, so the chunks'
 * code cache is written at build time (an installed copy may be read-only to the service).
 * Resolves with an error message when the server did not start; the build goes on without a cache.
 */
export async function warmCodeCache(timeoutMs = 30_000): Promise<string | null> {
  const data = mkdtempSync(join(tmpdir(), 'postbox-build-'))
  // Only what the server needs: a database URL or settings in the builder's environment must not reach it.
  const env = { PATH: process.env.PATH ?? '', HOME: data, POSTBOX_DATA_DIR: data, POSTBOX_HOST: '127.0.0.1', POSTBOX_PORT: '0' }
  const child = spawn(process.execPath, [CLI, 'serve'], { cwd: data, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  try {
    return await new Promise<string | null>((resolve) => {
      const timer = setTimeout(() => resolve(`the server did not start within ${timeoutMs} ms:\n${output}`), timeoutMs)
      const listen = (chunk: Buffer): void => {
        output += chunk.toString('utf8')
        if (!output.includes('"msg":"listening"')) return
        clearTimeout(timer)
        child.stdout.off('data', listen)
        // A clean stop: the cache is written at exit.
        child.once('exit', (code) => resolve(code === 0 ? null : `the server exited with ${code} after SIGTERM:\n${output}`))
        child.kill('SIGTERM')
      }
      child.stdout.on('data', listen)
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
      child.once('error', (err) => resolve(err.message))
    })
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    rmSync(data, { recursive: true, force: true })
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const r = await bundleServer()
  process.stdout.write(`bundled dist/src/cli.js: ${r.modules} modules into ${r.files.filter((f) => f.endsWith('.cjs')).length} files (packages bundled in: ${r.packages.join(', ')})\n`)
  writeFileSync(join(ROOT, 'dist', FRESH_SCHEMA_FILE), consolidateSchema(readFileSync(join(ROOT, 'schema.sql'), 'utf8')))
  const failed = await warmCodeCache()
  const cached = readdirSync(join(SRC, 'chunks')).filter((f) => f.endsWith('.v8-cache')).length
  process.stdout.write(failed === null ? `code cache written for ${cached} files\n` : `postbox build: no code cache (${failed})\n`)
}
