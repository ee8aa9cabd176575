import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import Module from 'node:module'
import { dirname, sep } from 'node:path'
import vm from 'node:vm'

/** The parts of Node's CommonJS loader the cache hooks into (not in @types/node's Module). */
interface LoaderModule {
  _compile(content: string, filename: string): unknown
  exports: unknown
}

/** How long after start the scripts compiled without a cache have their cache written. */
const WRITE_AFTER_MS = 2_000

/**
 * V8 code cache for the server bundle (docs/performance.md, "Start"): every CommonJS file under
 * `dir` is compiled with the cache V8 wrote beside it (`<file>.v8-cache`) on an earlier start,
 * so start skips most of the parsing and compiling of Postbox's own code. A file without a usable
 * cache (first start, another Node version or V8 flags: V8 rejects those) compiles as usual, and
 * its cache is written two seconds later or at exit, whichever comes first, with the functions
 * start compiled by then. A directory that cannot be written (a read-only install) only means no
 * cache is written. The files must not use `import()`: on Node 20 a script compiled this way has
 * dynamic import only behind an experimental flag (scripts/bundle-server.ts checks the bundle).
 */
export function installCodeCache(dir: string): void {
  const prefix = dir.endsWith(sep) ? dir : dir + sep
  const proto = Module.prototype as unknown as LoaderModule
  const compile = proto._compile
  const uncached: { script: vm.Script; file: string }[] = []
  proto._compile = function (this: LoaderModule, content: string, filename: string): unknown {
    if (!filename.startsWith(prefix) || !filename.endsWith('.cjs')) return compile.call(this, content, filename)
    const file = `${filename}.v8-cache`
    let cachedData: Buffer | undefined
    try {
      cachedData = readFileSync(file)
    } catch {}
    // Node strips a hashbang before compiling; a comment keeps the line numbers.
    const source = Module.wrap(content.startsWith('#!') ? `//${content.slice(2)}` : content)
    const script = new vm.Script(source, { filename, cachedData })
    if (cachedData === undefined || script.cachedDataRejected === true) {
      // The first file without a cache schedules the writes; a start with every cache accepted schedules nothing.
      if (uncached.push({ script, file }) === 1) {
        setTimeout(write, WRITE_AFTER_MS).unref()
        process.once('exit', write)
      }
    }
    const wrapper = script.runInThisContext({ displayErrors: true }) as (...args: unknown[]) => unknown
    return wrapper.call(this.exports, this.exports, Module.createRequire(filename), this, filename, dirname(filename))
  }
  const write = (): void => {
    for (const { script, file } of uncached.splice(0)) {
      const tmp = `${file}.${process.pid}.tmp`
      try {
        writeFileSync(tmp, script.createCachedData())
        renameSync(tmp, file)
      } catch {
        rmSync(tmp, { force: true })
      }
    }
  }
}
