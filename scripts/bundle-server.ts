import { existsSync, readFileSync, rmSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { dirname, join, posix, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { rolldown, RolldownMagicString, type Plugin } from 'rolldown'

/**
 * The build step after tsc (`npm run build`, docs/architecture.md "Build"): rewrites
 * dist/src/cli.js in place as one ES module holding Postbox's own compiled files and the many
 * small ones of the HTTP stack (hono, zod and their helpers), with dist/src/chunks/ for what the
 * CLI imports dynamically (the server, the PostgreSQL backend, marked…). An idle server then
 * loads 54 files instead of ~400. Packages with native code, worker threads or lazy loading of
 * their own stay external and load from node_modules as before. The rest of dist/ (the library
 * entry dist/src/index.js, the checkpoint worker, the benchmarks) is left as tsc wrote it.
 */

/** The repository root (this file is scripts/bundle-server.ts, or dist/scripts/bundle-server.js once built). */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), import.meta.url.includes('/dist/scripts/') ? '../..' : '..')
/** tsc's output, the bundle's input and where it is written. */
const SRC = join(ROOT, 'dist', 'src')
const CLI = join(SRC, 'cli.js')
/** The first line after the hashbang of a bundled cli.js: a second run without tsc first would bundle the bundle. */
const MARK = '// postbox: bundled by scripts/bundle-server.ts'

/** Packages bundled in: pure JavaScript, many small files each, all needed by the idle server. */
const BUNDLED = [/^hono(\/|$)/, /^zod(\/|$)/, /^ipaddr\.js$/, /^@hono\//, /^@asteasolutions\//]

/** Bare specifiers left to Node: built-ins, and every package not in BUNDLED. */
function isExternal(id: string): boolean {
  if (id.startsWith('.') || id.startsWith('/') || id.startsWith('\0')) return false
  if (id.startsWith('node:') || builtinModules.includes(id)) return true
  return !BUNDLED.some((re) => re.test(id))
}

/** Stands in for `import.meta.url` in a bundled file of ours until the chunk it lands in is known. */
const URL_OF = '__postboxModuleUrl'

/**
 * Keeps `import.meta.url` meaning the file it was written in (dist/src/store/checkpointer.js finds
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
        return `new URL(${JSON.stringify(rel)}, import.meta.url).href`
      })
      return { code: s.toString(), map: s.generateMap({ hires: true }).toString() }
    },
  }
}

/** Bundles dist/src/cli.js in place; returns the files written and the packages bundled in. */
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
      format: 'esm',
      entryFileNames: '[name].js',
      chunkFileNames: 'chunks/[name]-[hash].js',
      banner: MARK,
      // One-byte source: V8 keeps a file with any character above U+00FF as a two-byte string.
      charset: 'ascii',
      comments: { legal: true, annotation: true, jsdoc: false },
      sourcemap: true,
    })
    for (const o of output) {
      if (o.type !== 'chunk') continue
      for (const m of o.moduleIds) {
        modules++
        const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(m)
        if (pkg) packages.add(pkg[1]!)
      }
    }
    return { files: output.map((o) => o.fileName), modules, packages: [...packages].sort() }
  } finally {
    await bundle.close()
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const r = await bundleServer()
  process.stdout.write(`bundled dist/src/cli.js: ${r.modules} modules into ${r.files.filter((f) => f.endsWith('.js')).length} files (packages bundled in: ${r.packages.join(', ')})\n`)
}
