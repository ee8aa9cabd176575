import Database from 'better-sqlite3'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readFileSync, realpathSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from './helpers.js'
import { SIGNAL_COPY_WINDOW_MS } from '../src/server.js'
import { apiClient, ensureBuilt, newAdminKey, ROOT, serverEnv, startServer } from './support/server-process.js'

/** Bounds every wait of a step (start, stop); the server starts and stops in well under a second. */
const STEP_MS = 20_000

/** `npm start` as a user runs it; resolves with the process, the port it listens on and the pid of its node. */
async function npmStart(dataDir: string, opts: { key?: string; detached?: boolean } = {}): Promise<{ npm: ChildProcess; port: number; node: number; output: () => string }> {
  // detached: a process group of its own, as a terminal's foreground job has.
  const npm = spawn('npm', ['start', '--silent'], { cwd: ROOT, env: serverEnv(dataDir, opts.key ?? newAdminKey()), stdio: ['ignore', 'pipe', 'pipe'], detached: opts.detached ?? false })
  let out = ''
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start did not listen in time:\n${out}`)), STEP_MS)
    const onData = (b: Buffer): void => {
      out += b.toString('utf8')
      const m = /"port":(\d+)[^\n]*"msg":"listening"/.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve(Number(m[1]))
      }
    }
    npm.stdout!.on('data', onData)
    npm.stderr!.on('data', onData)
    npm.once('exit', (code) => reject(new Error(`npm start exited (${code}):\n${out}`)))
  })
  // The process npm started (with `exec` in the script there is no shell between them).
  const children = readFileSync(`/proc/${npm.pid}/task/${npm.pid}/children`, 'utf8').trim().split(/\s+/).map(Number)
  expect(children).toHaveLength(1)
  return { npm, port, node: children[0]!, output: () => out }
}

/** Resolves once `output()` matches `pattern` (a state the server logs), or rejects after STEP_MS. */
async function logged(output: () => string, pattern: RegExp): Promise<void> {
  const deadline = Date.now() + STEP_MS
  while (!pattern.test(output())) {
    if (Date.now() > deadline) throw new Error(`never logged ${pattern}:\n${output()}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** True when something accepts connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1')
    s.once('connect', () => (s.destroy(), resolve(true)))
    s.once('error', () => resolve(false))
  })
}

describe('npm start', () => {
  const dirs: (() => void)[] = []
  const started: ChildProcess[] = []
  const nodes: number[] = []
  beforeAll(async () => ensureBuilt(), 180_000)
  afterAll(() => {
    for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
    // A server npm failed to stop (the failure this test is for) must not outlive the run.
    // Only while the pid is still that server (this checkout's CLI), never a process that reused it.
    for (const pid of nodes) {
      try {
        if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('dist/src/cli.js') && realpathSync(`/proc/${pid}/cwd`) === realpathSync(ROOT)) process.kill(pid, 'SIGKILL')
      } catch {}
    }
    for (const d of dirs) d()
  })

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} to the process npm start started stops the server cleanly, leaving nothing on the port`, async () => {
      const t = tempDir('postbox-npm-start-')
      dirs.push(t.cleanup)
      const run = await npmStart(t.dir)
      started.push(run.npm)
      nodes.push(run.node)
      expect(await listening(run.port)).toBe(true)
      const exited = new Promise<number | null>((resolve) => run.npm.once('exit', (code) => resolve(code)))
      run.npm.kill(signal)
      const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), STEP_MS))])
      expect(code, run.output()).not.toBe('timeout')
      // The server's own drain ran to its end, and no orphan holds the port.
      expect(run.output()).toMatch(/"msg":"stopped"/)
      expect(existsSync(`/proc/${run.node}`)).toBe(false)
      expect(await listening(run.port)).toBe(false)
    })
  }

  it('Ctrl-C in a terminal (SIGINT to npm and node, and npm forwarding its own) drains: the delivery in flight completes', async () => {
    const t = tempDir('postbox-npm-ctrl-c-')
    dirs.push(t.cleanup)
    const { receiver, held } = await heldReceiver()
    const key = newAdminKey()
    const run = await npmStart(t.dir, { key, detached: true })
    started.push(run.npm)
    nodes.push(run.node)
    try {
      const call = (path: string, body: unknown) =>
        fetch(`http://127.0.0.1:${run.port}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
      expect((await call('/v1/endpoints', { url })).status).toBe(201)
      expect((await call('/v1/events', { type: 'ctrl.c', data: {} })).status).toBe(202)
      const deadline = Date.now() + STEP_MS
      while (held.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
      expect(held).toHaveLength(1)

      const exited = new Promise<number | null>((resolve) => run.npm.once('exit', (code) => resolve(code)))
      // What a terminal does on Ctrl-C: SIGINT to every process of the foreground group.
      process.kill(-run.npm.pid!, 'SIGINT')
      await logged(run.output, /"msg":"shutting down"/)
      // npm forwards its copy, which node ignores (logged as such) unless the kernel merged it
      // with the terminal's own while both were pending: either way the node is still draining.
      expect(existsSync(`/proc/${run.node}`)).toBe(true)
      expect(run.output()).toMatch(/press Ctrl-C again \(or send SIGTERM\) 2 s or more after the first/)
      for (const answer of held) answer()
      const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), STEP_MS))])
      expect(code, run.output()).not.toBe('timeout')
      expect(run.output()).toMatch(/"msg":"stopped"/)
      expect(run.output()).not.toMatch(/forced exit/)
      const db = new Database(join(t.dir, 'postbox.db'), { readonly: true })
      expect(db.prepare(`SELECT status FROM deliveries`).pluck().all()).toEqual(['success'])
      db.close()
    } finally {
      await new Promise<void>((r) => receiver.close(() => r()))
    }
  })

  it('a second Ctrl-C after the 2 s window forces the exit (130) without waiting for the drain', async () => {
    const t = tempDir('postbox-force-')
    dirs.push(t.cleanup)
    const { receiver, held } = await heldReceiver()
    const key = newAdminKey()
    const server = await startServer(serverEnv(t.dir, key))
    try {
      const call = apiClient(() => server.baseUrl, key)
      expect((await call('POST', '/v1/endpoints', { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` })).status).toBe(201)
      expect((await call('POST', '/v1/events', { type: 'force', data: {} })).status).toBe(202)
      const deadline = Date.now() + STEP_MS
      while (held.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
      expect(held).toHaveLength(1)
      const exited = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)))
      server.child.kill('SIGINT')
      await logged(server.output, /"msg":"shutting down"/)
      // The server took the first signal before it logged it, so 2.1 s after seeing the log the
      // window has passed by the server's own clock too: the next Ctrl-C is the operator's.
      await new Promise((r) => setTimeout(r, SIGNAL_COPY_WINDOW_MS + 100))
      server.child.kill('SIGINT')
      expect(await exited).toBe(130)
      expect(server.output()).toMatch(/"msg":"forced exit: the drain was not finished/)
      expect(server.output()).not.toMatch(/"msg":"stopped"/)
    } finally {
      for (const answer of held) answer()
      await new Promise<void>((r) => receiver.close(() => r()))
    }
  })
})

/** A receiver that answers only when the test says so (`held`): a delivery to it stays in flight meanwhile. */
async function heldReceiver(): Promise<{ receiver: Server; held: (() => void)[] }> {
  const held: (() => void)[] = []
  const receiver = createServer((req, res) => {
    req.resume()
    held.push(() => res.writeHead(200).end('ok'))
  })
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()))
  return { receiver, held }
}
