import { describe, expect, it } from 'vitest'
import { Writable } from 'node:stream'
import pino from 'pino'
import { createOutageBackoff } from './outage-backoff.js'

/** A logger whose lines are kept as `level msg`. */
function recordingLog() {
  const lines: string[] = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      const o = JSON.parse(chunk.toString('utf8')) as { level: number; msg: string }
      lines.push(`${o.level} ${o.msg}`)
      done()
    },
  })
  return { log: pino({ level: 'debug' }, sink), lines }
}

const terminated = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })

describe('the dispatcher pause while the database is unavailable', () => {
  it('pauses for a growing backoff on outage errors, and ends at the first success or resume', () => {
    const { log, lines } = recordingLog()
    const b = createOutageBackoff({ enabled: true, rng: () => 1, log })
    expect(b.paused(0)).toBe(false)
    expect(b.failed(terminated, 1_000, 'claim')).toBe(100)
    expect([b.paused(1_099), b.paused(1_100)]).toEqual([true, false])
    expect(b.failed(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 1_100, 'settle')).toBe(200)
    expect(b.failed(new Error('Connection terminated unexpectedly'), 1_300, 'claim')).toBe(400)
    expect(b.paused(1_699)).toBe(true)
    // A reconnect said the database is back: the next claim runs at once, the count goes on.
    b.resume()
    expect(b.paused(1_301)).toBe(false)
    expect(b.failed(terminated, 1_400, 'claim')).toBe(800)
    b.succeeded()
    expect(b.paused(1_401)).toBe(false)
    expect(b.failed(terminated, 5_000, 'claim')).toBe(100)
    b.succeeded()
    b.succeeded()
    // One line when the database goes, one when it comes back; the attempts between at debug level.
    expect(lines).toEqual([
      '50 claim failed: the database is unavailable; retrying with backoff',
      '20 settle failed again: the database is still unavailable',
      '20 claim failed again: the database is still unavailable',
      '20 claim failed again: the database is still unavailable',
      '30 the database is reachable again; claiming resumes',
      '50 claim failed: the database is unavailable; retrying with backoff',
      '30 the database is reachable again; claiming resumes',
    ])
  })

  it('leaves other errors, and SQLite, to the caller', () => {
    const { log, lines } = recordingLog()
    const b = createOutageBackoff({ enabled: true, rng: () => 1, log })
    expect(b.failed(Object.assign(new Error('syntax error'), { code: '42601' }), 0, 'claim')).toBeNull()
    expect(b.paused(1)).toBe(false)
    const off = createOutageBackoff({ enabled: false, rng: () => 1, log })
    expect(off.failed(terminated, 0, 'claim')).toBeNull()
    expect(off.paused(1)).toBe(false)
    expect(lines).toEqual([])
  })
})
