import { describe, expect, it } from 'vitest'
import { parseArgs, usage, UsageError } from './cli-args.js'
import { SETTINGS } from './config.js'

describe('parseArgs', () => {
  it('separates positionals from setting flags and command flags', () => {
    expect(parseArgs(['keys', 'create', '--role', 'admin', '--port', '9000', '--name=ci'])).toEqual({
      positionals: ['keys', 'create'],
      flags: { role: 'admin', name: 'ci' },
      help: false,
    })
  })
  it('treats --metrics-public without a value as true and keeps the next flag', () => {
    expect(parseArgs(['serve', '--metrics-public', '--port', '1']).positionals).toEqual(['serve'])
  })
  it('recognises --help and -h', () => {
    expect(parseArgs(['-h']).help).toBe(true)
    expect(parseArgs(['serve', '--help']).help).toBe(true)
  })
  it('rejects unknown options and missing values', () => {
    expect(() => parseArgs(['serve', '--prot', '1'])).toThrow(UsageError)
    expect(() => parseArgs(['serve', '--port'])).toThrow(/needs a value/)
  })
  it('usage lists every setting', () => {
    const text = usage()
    for (const s of SETTINGS) expect(text).toContain(s.env)
  })
})
