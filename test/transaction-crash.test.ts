import Database from 'better-sqlite3'
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Postbox } from '../src/postbox.js'
import { tempDir } from './helpers.js'
import { startReceiver } from './support/receiver.js'
import { ensureBuilt, killAllChildren, killChild, newAdminKey, ROOT, runCli, serverEnv } from './support/server-process.js'

/**
 * docs/outbox.md: "a kill -9 between the commit and the pick-up loses nothing". A child process (the
 * built library) commits an application row and an event in one `pb.transaction` and is killed
 * with SIGKILL as soon as it reports the commit; it never starts delivering, so the kill lands
 * between the commit and any pick-up. A Postbox opened again on the file delivers the event
 * exactly once to a real receiver, and the row is there; `postbox migrate` leaves the
 * application's table alone.
 */

const CHILD = `
const { Postbox } = await import(process.env.PB_MODULE)
const pb = await Postbox.open({ db: process.env.PB_DB, bootstrapAdminKey: false })
const id = await pb.transaction(async (tx) => {
  await tx.sql.run('CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, total INTEGER NOT NULL)')
  await tx.sql.run('INSERT INTO orders (id, total) VALUES (?, ?)', 'o1', 42)
  const ev = await tx.events.send({ type: 'order.paid', data: { order: 'o1' } })
  return ev.id
})
process.stdout.write('committed ' + id + '\\n')
setInterval(() => {}, 60_000)
`

const cleanups: (() => unknown)[] = []
beforeAll(async () => {
  await ensureBuilt()
}, 180_000)
afterAll(async () => {
  await killAllChildren()
  for (const c of cleanups.reverse()) await c()
})

/** Runs the child until it reports its commit, then SIGKILLs it; resolves with the event id. */
async function commitThenKill(dir: string, db: string): Promise<string> {
  const script = join(dir, 'child.mjs')
  writeFileSync(script, CHILD)
  const child = spawn(process.execPath, [script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', PB_MODULE: pathToFileURL(join(ROOT, 'dist', 'src', 'index.js')).href, PB_DB: db },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  const id = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString('utf8')
      const m = /committed (\S+)\n/.exec(out)
      if (m) resolve(m[1]!)
    })
    child.stderr.on('data', (b: Buffer) => (out += b.toString('utf8')))
    child.once('exit', (code) => reject(new Error(`the child exited (${String(code)}) before its commit:\n${out}`)))
  })
  await killChild(child, 'SIGKILL')
  expect(child.signalCode).toBe('SIGKILL')
  return id
}

describe('pb.transaction under kill -9', () => {
  it('a commit the process did not live to deliver is delivered exactly once after a restart, with its application row', async () => {
    const t = tempDir('postbox-txn-crash-')
    cleanups.push(t.cleanup)
    const rx = await startReceiver({ status: 200 })
    cleanups.push(() => rx.close())
    const db = join(t.dir, 'postbox.db')
    let pb = await Postbox.open({ db, allowNetworks: ['127.0.0.0/8'], bootstrapAdminKey: false })
    await pb.endpoints.create({ url: `${rx.url}/hooks` })
    await pb.close()

    const id = await commitThenKill(t.dir, db)
    const raw = new Database(db, { readonly: true })
    expect(raw.prepare(`SELECT id, total FROM orders`).all()).toEqual([{ id: 'o1', total: 42 }])
    expect(raw.prepare(`SELECT status FROM deliveries WHERE event_id = ?`).pluck().all(id)).toEqual(['pending'])
    raw.close()
    expect(rx.requests).toHaveLength(0)

    pb = await Postbox.open({ db, allowNetworks: ['127.0.0.0/8'], bootstrapAdminKey: false })
    pb.start()
    await rx.waitFor(1, 15_000)
    const settled = async (): Promise<boolean> => (await pb.events.get(id)).deliveries.every((d) => d.status === 'success')
    for (const deadline = Date.now() + 15_000; !(await settled()); ) {
      if (Date.now() > deadline) throw new Error('the delivery never settled')
      await new Promise((r) => setTimeout(r, 20))
    }
    await pb.close()
    expect(rx.requests.map((r) => (JSON.parse(r.body) as { id: string }).id)).toEqual([id])

    // `postbox migrate` on the current file leaves the application's table and row alone.
    const before = new Database(db, { readonly: true })
    const sqlBefore = before.prepare(`SELECT sql FROM sqlite_schema WHERE name = 'orders'`).pluck().get()
    before.close()
    const r = await runCli(['migrate'], serverEnv(t.dir, newAdminKey()))
    expect(r.code, r.output).toBe(0)
    const after = new Database(db, { readonly: true })
    expect(after.prepare(`SELECT sql FROM sqlite_schema WHERE name = 'orders'`).pluck().get()).toBe(sqlBefore)
    expect(after.prepare(`SELECT id, total FROM orders`).all()).toEqual([{ id: 'o1', total: 42 }])
    after.close()
  }, 60_000)

  it("docs/outbox.md's runnable example runs as printed", () => {
    const t = tempDir('postbox-outbox-example-')
    cleanups.push(t.cleanup)
    const doc = readFileSync(join(ROOT, 'docs', 'outbox.md'), 'utf8')
    const example = /```js\n([\s\S]*?)```/.exec(doc)![1]!
    const dist = pathToFileURL(join(ROOT, 'dist', 'src', 'index.js')).href
    writeFileSync(join(t.dir, 'outbox-example.mjs'), example.replace("from 'postbox'", `from '${dist}'`))
    const r = spawnSync(process.execPath, ['outbox-example.mjs'], { cwd: t.dir, encoding: 'utf8', timeout: 30_000 })
    expect(r.status, r.stdout + r.stderr).toBe(0)
    expect(r.stdout).toContain('second payment rolled back: SQLITE_CONSTRAINT_PRIMARYKEY')
    expect(r.stdout).toContain('delivered order.paid true')
    expect(r.stdout).toContain('[ { n: 1 } ]')
  }, 60_000)
})
