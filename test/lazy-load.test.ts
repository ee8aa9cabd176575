import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ensureBuilt, ROOT } from './support/server-process.js'

// An idle server must not pay for what it does not use (docs/performance.md): this opens and
// starts a Postbox from dist/, answers /healthz, and lists the packages the process loaded.
const SCRIPT = `
import { createRequire } from 'node:module'
const { Postbox } = await import(process.argv[1] + '/dist/src/postbox.js')
const pb = await Postbox.open({ dataDir: process.argv[2], adminKey: 'pbk_' + 'd'.repeat(43), processMetrics: true })
pb.start()
const res = await pb.app.request('/healthz')
await new Promise((r) => setTimeout(r, 300))
const cache = createRequire(import.meta.url).cache
const pkgs = (...names) => Object.fromEntries(names.map((n) => [n, Object.keys(cache).some((f) => f.includes('/node_modules/' + n + '/'))]))
const before = pkgs('liquidjs', 'nodemailer', 'undici', 'prom-client', 'ajv', 're2js', 'pg')
const text = await (await pb.app.request('/metrics', { headers: { authorization: 'Bearer pbk_' + 'd'.repeat(43) } })).text()
console.log(JSON.stringify({ status: res.status, before, metrics: text.includes('postbox_queue_depth'), promClient: pkgs('prom-client')['prom-client'] }))
await pb.close()
`

describe('lazy loading', () => {
  it('an idle server loads neither liquidjs, nodemailer, undici, prom-client, ajv, re2js nor pg, and /metrics still answers', async () => {
    await ensureBuilt()
    const dir = mkdtempSync(join(tmpdir(), 'postbox-lazy-'))
    try {
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', SCRIPT, ROOT, dir], { encoding: 'utf8', timeout: 30_000 })
      expect(r.stderr).toBe('')
      const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as { status: number; before: Record<string, boolean>; metrics: boolean; promClient: boolean }
      expect(out.status).toBe(200)
      expect(out.before).toEqual({ liquidjs: false, nodemailer: false, undici: false, 'prom-client': false, ajv: false, re2js: false, pg: false })
      expect(out.metrics).toBe(true)
      expect(out.promClient).toBe(true)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('a script whose event needs a validation worker gets its answer before the process ends', async () => {
    await ensureBuilt()
    const dir = mkdtempSync(join(tmpdir(), 'postbox-lazy-'))
    // No server keeps this process alive: only the job in flight does (src/apps/schema-pool.ts).
    const script = `
const { Postbox } = await import(process.argv[1] + '/dist/src/postbox.js')
const pb = await Postbox.open({ dataDir: process.argv[2] })
const tree = { $defs: { n: { type: 'object', properties: { kids: { type: 'array', items: { $ref: '#/$defs/n' } } } } }, $ref: '#/$defs/n' }
await pb.eventTypes.put('tree', { schema: tree })
const ok = await pb.events.send({ type: 'tree', data: { kids: [{ kids: [] }] } })
const bad = await pb.events.send({ type: 'tree', data: { kids: [1] } }).catch((e) => e.code)
console.log(JSON.stringify({ ok: ok.type, bad }))
await pb.close()
`
    try {
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, ROOT, dir], { encoding: 'utf8', timeout: 30_000 })
      expect(r.stderr).toBe('')
      expect(r.status).toBe(0)
      expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toEqual({ ok: 'tree', bad: 'validation_failed' })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
