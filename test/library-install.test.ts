import { spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from './helpers.js'
import { ensureBuilt, ROOT } from './support/server-process.js'

/**
 * Library mode from another project (docs/api.md, "Installing it into another project"): the
 * packed tarball (`npm pack`) unpacked into a clean project's node_modules, beside the package's
 * declared `dependencies` only (linked from this checkout's node_modules, where `npm install`
 * would have fetched them: this test has no network), then imported by name and run. Nothing
 * from the checkout's src/, test/ or devDependencies is reachable from there.
 */
describe('installed into another project', () => {
  const t = tempDir('postbox-library-')
  afterAll(() => t.cleanup())
  beforeAll(async () => ensureBuilt(), 180_000)

  it("`npm pack`'s tarball, unpacked beside its dependencies, imports as 'postbox' and delivers; its bin runs", { timeout: 120_000 }, async () => {
    // --ignore-scripts: `prepare` (the full build) is what `npm pack` would run first; dist/ is built above.
    const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', t.dir], { cwd: ROOT, encoding: 'utf8' })
    expect(pack.status, pack.stderr).toBe(0)
    const packed = (JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[])[0]!
    const files = packed.files.map((f) => f.path)
    for (const f of ['package.json', 'README.md', 'schema.sql', 'dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/cli.js', 'dist/src/postbox.js']) expect(files, f).toContain(f)
    expect(files.filter((f) => /^(src|test|node_modules|scripts|bench)\//.test(f) || f.endsWith('.test.js'))).toEqual([])

    const app = join(t.dir, 'app')
    const modules = join(app, 'node_modules')
    mkdirSync(join(modules, 'postbox'), { recursive: true })
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module', dependencies: { postbox: `file:../${packed.filename}` } }))
    const untar = spawnSync('tar', ['-xzf', join(t.dir, packed.filename), '-C', join(modules, 'postbox'), '--strip-components=1'], { encoding: 'utf8' })
    expect(untar.status, untar.stderr).toBe(0)
    const manifest = JSON.parse(readFileSync(join(modules, 'postbox', 'package.json'), 'utf8')) as { dependencies: Record<string, string>; bin: Record<string, string> }
    for (const dep of Object.keys(manifest.dependencies)) {
      mkdirSync(join(modules, dep, '..'), { recursive: true })
      symlinkSync(join(ROOT, 'node_modules', dep), join(modules, dep))
    }
    // What npm does for a dependency's bin: a link in node_modules/.bin, and the file made executable.
    mkdirSync(join(modules, '.bin'))
    symlinkSync(join('..', 'postbox', manifest.bin.postbox!), join(modules, '.bin', 'postbox'))
    chmodSync(join(modules, 'postbox', manifest.bin.postbox!), 0o755)

    writeFileSync(
      join(app, 'main.js'),
      `import { createServer } from 'node:http'
import { Postbox } from 'postbox'
const got = []
const rx = createServer((req, res) => { let b = ''; req.on('data', (c) => (b += c)); req.on('end', () => { got.push(JSON.parse(b)); res.end('ok') }) })
await new Promise((r) => rx.listen(0, '127.0.0.1', r))
const pb = await Postbox.open({ db: './data/postbox.db', allowNetworks: ['127.0.0.0/8'] })
await pb.endpoints.create({ url: 'http://127.0.0.1:' + rx.address().port + '/hooks', event_types: ['user.*'] })
await pb.events.send({ type: 'user.created', data: { id: 'u_1' } })
pb.start()
while (got.length === 0) await new Promise((r) => setTimeout(r, 20))
await pb.close()
rx.close()
console.log(JSON.stringify({ type: got[0].type, data: got[0].data }))
`,
    )
    mkdirSync(join(app, 'data'))
    const run = spawnSync(process.execPath, ['main.js'], { cwd: app, encoding: 'utf8', timeout: 60_000 })
    expect(run.status, run.stderr).toBe(0)
    expect(JSON.parse(run.stdout.trim())).toEqual({ type: 'user.created', data: { id: 'u_1' } })
    // The path the docs give an installed package: `npx postbox` finds node_modules/.bin/postbox
    // (--no: never install or build anything to find it).
    const cli = spawnSync('npx', ['--no', 'postbox', 'stats', '--data-dir', './data'], { cwd: app, encoding: 'utf8', timeout: 60_000 })
    expect(cli.status, cli.stderr).toBe(0)
    expect(JSON.parse(cli.stdout)).toHaveProperty('deliveries')
  })
})
