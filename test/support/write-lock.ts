import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { ROOT } from './server-process.js'

/** Polls `check` every 25 ms until it holds; throws after `timeoutMs`. */
async function waitFor(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/**
 * Another process holding the write lock until told: it opens the database, takes the lock
 * (BEGIN IMMEDIATE), prints `{"locked":true}`, and on a line on stdin prints the `seq` of every
 * `locked` event stored at that moment (read inside its transaction: nothing else can have
 * committed), commits and exits.
 */
export async function holdWriteLock(dbPath: string): Promise<{ release(): Promise<number[]>; kill(): void }> {
  const script = `
    const db = new (require('better-sqlite3'))(process.argv[1])
    db.pragma('busy_timeout = 5000')
    db.exec('BEGIN IMMEDIATE')
    console.log(JSON.stringify({ locked: true }))
    process.stdin.once('data', () => {
      const stored = db.prepare("SELECT json_extract(body, '$.data.seq') FROM events WHERE type = 'locked'").pluck().all()
      db.exec('COMMIT')
      db.close()
      console.log(JSON.stringify({ stored }))
      process.exit(0)
    })`
  const child = spawn(process.execPath, ['-e', script, dbPath], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] })
  const lines: unknown[] = []
  let pending = ''
  child.stdout!.on('data', (b: Buffer) => {
    pending += b.toString('utf8')
    for (let nl = pending.indexOf('\n'); nl !== -1; nl = pending.indexOf('\n')) {
      lines.push(JSON.parse(pending.slice(0, nl)))
      pending = pending.slice(nl + 1)
    }
  })
  await waitFor('the other process to hold the write lock', () => lines.length === 1 || child.exitCode !== null, 15_000)
  if (JSON.stringify(lines[0]) !== '{"locked":true}') throw new Error(`the lock holder failed: ${JSON.stringify(lines[0] ?? null)}`)
  return {
    kill: () => void (child.exitCode === null && child.kill('SIGKILL')),
    async release() {
      child.stdin!.write('release\n')
      await waitFor('the other process to commit', () => lines.length === 2, 15_000)
      return (lines[1] as { stored: number[] }).stored
    },
  }
}

/**
 * True while the main thread of process `pid` sleeps in SQLite's busy handler: waiting for a
 * lock is the only place SQLite sleeps, and an idle Node main thread waits in epoll, never in
 * nanosleep (Linux: /proc/<pid>/task/<pid>/wchan names the kernel function it waits in).
 */
export function sleepsInBusyHandler(pid: number): boolean {
  return readFileSync(`/proc/${pid}/task/${pid}/wchan`, 'utf8') === 'hrtimer_nanosleep'
}
