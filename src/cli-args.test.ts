import { describe, expect, it } from 'vitest'
import { checkArity, parseArgs, usage, UsageError } from './cli-args.js'
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

describe('checkArity', () => {
  it.each([
    [['serve'], null],
    [['serve', 'x'], 'serve takes no arguments; unexpected "x"'],
    [['stats', 'a', 'b'], 'stats takes no arguments; unexpected "a" "b"'],
    [['backup', 'f'], null],
    [['backup'], 'backup needs <file>'],
    [['send', 't', '{}'], null],
    [['send', 't', '{}', 'x'], 'send takes only <type> <json>; unexpected "x"'],
    [['keys', 'revoke', 'key_1'], null],
    [['keys', 'create', 'x'], 'keys create takes no arguments; unexpected "x"'],
    // Unknown commands and subcommands are named by the command itself.
    [['frobnicate', 'x'], null],
    [['keys'], null],
    [['keys', 'rotate', 'x', 'y'], null],
  ])('%j → %s', (positionals, message) => {
    if (message === null) expect(() => checkArity(positionals)).not.toThrow()
    else expect(() => checkArity(positionals)).toThrow(new UsageError(message))
  })
})
