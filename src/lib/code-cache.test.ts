import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { ensureBuilt } from '../../test/support/server-process.js'

const COMPILED = join(import.meta.dirname, '..', '..', 'dist', 'src', 'lib', 'code-cache.js')

let dir: string
beforeAll(async () => {
  await ensureBuilt()
}, 180_000)
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'postbox-code-cache-'))
  // A script as the bundle writes them: a hashbang, require of another chunk and of a package.
  writeFileSync(join(dir, 'main.cjs'), `#!/usr/bin/env node
const { add } = require('./helper.cjs')
const { word } = require('./plain.js')
console.log(JSON.stringify({ sum: add(2, 3), word, os: typeof require('node:os').cpus, file: __filename.endsWith('main.cjs') }))
`)
  writeFileSync(join(dir, 'helper.cjs'), `exports.add = (a, b) => a + b\n`)
  writeFileSync(join(dir, 'plain.js'), `exports.word = 'hello'\n`)
  writeFileSync(join(dir, 'run.mjs'), `import { createRequire } from 'node:module'
import { installCodeCache } from ${JSON.stringify(pathToFileURL(COMPILED).href)}
installCodeCache(${JSON.stringify(dir)})
createRequire(import.meta.url)('./main.cjs')
`)
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

const run = (): unknown => {
  const r = spawnSync(process.execPath, [join(dir, 'run.mjs')], { encoding: 'utf8' })
  expect(r.stderr).toBe('')
  expect(r.status).toBe(0)
  return JSON.parse(r.stdout)
}

describe('installCodeCache', () => {
  it('writes a cache beside each script at exit and runs the scripts the same with it', () => {
    const expected = { sum: 5, word: 'hello', os: 'function', file: true }
    expect(run()).toEqual(expected)
    const cache = join(dir, 'main.cjs.v8-cache')
    expect(readFileSync(cache).length).toBeGreaterThan(0)
    expect(existsSync(join(dir, 'helper.cjs.v8-cache'))).toBe(true)
    // Files other than .cjs load as usual.
    expect(existsSync(join(dir, 'plain.js.v8-cache'))).toBe(false)
    expect(run()).toEqual(expected)
  })

  it('compiles as usual over a cache V8 rejects, and writes a good one', () => {
    const cache = join(dir, 'main.cjs.v8-cache')
    writeFileSync(cache, 'not a code cache')
    expect(run()).toEqual({ sum: 5, word: 'hello', os: 'function', file: true })
    expect(readFileSync(cache, 'utf8')).not.toBe('not a code cache')
  })
})
