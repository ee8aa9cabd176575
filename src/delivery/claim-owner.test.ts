import { spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { Worker } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'
import { CLAIM_OWNER, isOrphanedClaim, PID_NAMESPACE, processExited, processStart, type ProcessView } from './claim-owner.js'
import { processAlive } from '../lib/process.js'

describe('claim owners', () => {
  const view: ProcessView = { pid: 4242, start: '100', ns: '9', alive: (pid) => pid === 7, startOf: (pid) => (pid === 7 ? '70' : null) }

  it('names this process and its start in every claim token prefix', () => {
    expect(CLAIM_OWNER).toBe(`${process.pid}.${processStart(process.pid)}.n${PID_NAMESPACE}.`)
    expect(PID_NAMESPACE).toMatch(/^\d+$/)
    expect(isOrphanedClaim(`${CLAIM_OWNER}0123456789abcdef01234567`)).toBe(false)
  })

  it('is an orphan only when its owner is gone: a dead PID, or a PID now running another start', () => {
    expect(isOrphanedClaim('4242.100.n9.00ff', view)).toBe(false)
    expect(isOrphanedClaim('4242.99.n9.00ff', view)).toBe(true)
    expect(isOrphanedClaim('7.70.n9.00ff', view)).toBe(false)
    expect(isOrphanedClaim('7.69.n9.00ff', view)).toBe(true)
    expect(isOrphanedClaim('8.70.n9.00ff', view)).toBe(true)
    // Another namespace's PIDs mean nothing here (two containers on a volume are both PID 1):
    // its rows wait for their leases.
    expect(isOrphanedClaim('4242.99.n8.00ff', view)).toBe(false)
    expect(isOrphanedClaim('8.70.n8.00ff', view)).toBe(false)
    // Written before tokens named their namespace (or their owner): cannot be told, so they wait.
    expect(isOrphanedClaim('4242.99.00ff', view)).toBe(false)
    expect(isOrphanedClaim('8.70.00ff', view)).toBe(false)
    expect(isOrphanedClaim('0123456789abcdef01234567', view)).toBe(false)
  })

  it('checks real processes by default, and a worker thread of this process is this process', async () => {
    const gone = spawnSync(process.execPath, ['-e', '']).pid!
    expect(isOrphanedClaim(`${gone}.1.n${PID_NAMESPACE}.00ff`)).toBe(true)
    expect(isOrphanedClaim(`${process.ppid}.${processStart(process.ppid)}.n${PID_NAMESPACE}.00ff`)).toBe(false)
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads'); const s = require('node:fs').readFileSync('/proc/self/stat', 'utf8');
       parentPort.postMessage(process.pid + '.' + s.slice(s.lastIndexOf(')') + 2).split(' ')[19])`,
      { eval: true },
    )
    const seen = await new Promise<string>((resolve) => worker.once('message', resolve))
    await worker.terminate()
    expect(CLAIM_OWNER.startsWith(`${seen}.n`)).toBe(true)
  })

  it('counts a killed process that was not reaped yet (a zombie) as gone', async () => {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' })
    const pid = child.pid!
    const start = processStart(pid)
    const exited = new Promise((r) => child.once('exit', r))
    expect(processExited(pid)).toBe(false)
    expect(isOrphanedClaim(`${pid}.${start}.n${PID_NAMESPACE}.00ff`)).toBe(false)
    process.kill(pid, 'SIGKILL')
    // Without yielding to the event loop Node cannot reap it: it stays a zombie meanwhile.
    const state = (): string => { const s = readFileSync(`/proc/${pid}/stat`, 'utf8'); return s[s.lastIndexOf(')') + 2]! }
    for (const until = Date.now() + 5000; state() !== 'Z' && Date.now() < until; );
    expect(state()).toBe('Z')
    expect(processAlive(pid)).toBe(true)
    expect(processExited(pid)).toBe(true)
    expect(isOrphanedClaim(`${pid}.${start}.n${PID_NAMESPACE}.00ff`)).toBe(true)
    await exited
  })
})
