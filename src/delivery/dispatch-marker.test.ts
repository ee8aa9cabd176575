import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { claimDispatchMarker } from './dispatch-marker.js'
import { tempDir } from '../../test/helpers.js'

let cleanup: (() => void) | null = null
afterEach(() => {
  cleanup?.()
  cleanup = null
})

const dbIn = (): string => {
  const t = tempDir()
  cleanup = t.cleanup
  return join(t.dir, 'postbox.db')
}

/** A child process that lives until killed, and its pid. */
function sleeper(): { pid: number; stop: () => Promise<void> } {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' })
  return { pid: child.pid!, stop: () => new Promise((resolve) => (child.once('exit', () => resolve()), child.kill())) }
}

describe('claimDispatchMarker', () => {
  it('is sole with no marker, writes its pid, and a second dispatcher in this process is not', () => {
    const db = dbIn()
    const first = claimDispatchMarker(db)
    expect(first.sole).toBe(true)
    expect(readFileSync(`${db}-dispatcher.pid`, 'utf8')).toBe(String(process.pid))
    expect(claimDispatchMarker(db).sole).toBe(false)
    first.release()
    expect(existsSync(`${db}-dispatcher.pid`)).toBe(false)
    expect(claimDispatchMarker(db).sole).toBe(true)
  })

  it('is not sole while the process named in the marker lives, and replaces it once that process is gone', async () => {
    const db = dbIn()
    const other = sleeper()
    writeFileSync(`${db}-dispatcher.pid`, String(other.pid))
    expect(claimDispatchMarker(db).sole).toBe(false)
    await other.stop()
    const mine = claimDispatchMarker(db)
    expect(mine.sole).toBe(true)
    expect(readFileSync(`${db}-dispatcher.pid`, 'utf8')).toBe(String(process.pid))
    mine.release()
  })

  it('treats a marker with its own pid that it does not hold as left by an earlier process (a restarted container)', () => {
    const db = dbIn()
    writeFileSync(`${db}-dispatcher.pid`, String(process.pid))
    const m = claimDispatchMarker(db)
    expect(m.sole).toBe(true)
    m.release()
  })
})
