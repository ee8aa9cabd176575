import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { main } from '../src/cli.js'
import { tempDir } from './helpers.js'
import { ADMIN_KEY } from './support/api.js'

/**
 * Every command that takes a fixed number of positional words refuses any other number with a
 * usage error (exit 2) before doing anything: `postbox stats extra` must not print stats as if
 * the word were not there, and `postbox backup a b` must not write `a`.
 */
describe('postbox <command> with the wrong number of arguments', () => {
  let dir: string
  let cleanup: () => void
  let env: Record<string, string>
  let stdout = ''
  let stderr = ''
  beforeEach(async () => {
    ;({ dir, cleanup } = tempDir('postbox-arity-'))
    env = { POSTBOX_DATA_DIR: dir, POSTBOX_ADMIN_KEY: ADMIN_KEY, POSTBOX_LOG_LEVEL: 'silent' }
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => ((stdout += String(chunk)), true))
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => ((stderr += String(chunk)), true))
    // A database to work on, so that a command which ignored the extra word would succeed.
    expect(await main(['migrate'], env)).toBe(0)
    stdout = stderr = ''
  })
  afterEach(() => {
    vi.restoreAllMocks()
    cleanup()
  })

  it.each([
    [['stats', 'extra-arg'], 'stats takes no arguments; unexpected "extra-arg"'],
    [['check', 'x'], 'check takes no arguments; unexpected "x"'],
    [['migrate', 'now', 'please'], 'migrate takes no arguments; unexpected "now" "please"'],
    [['keys', 'list', 'all'], 'keys list takes no arguments; unexpected "all"'],
    [['keys', 'create', 'ci', '--role', 'viewer'], 'keys create takes no arguments; unexpected "ci"'],
    [['keys', 'revoke', 'key_a', 'key_b'], 'keys revoke takes only <id>; unexpected "key_b"'],
    [['keys', 'revoke'], 'keys revoke needs <id>'],
    [['backup', 'a.db', 'b.db'], 'backup takes only <file>; unexpected "b.db"'],
    [['backup'], 'backup needs <file>'],
    [['send', 'a.b', '{}', 'extra'], 'send takes only <type> <json>; unexpected "extra"'],
    [['send', 'a.b'], 'send needs <type> <json>'],
  ])('%j → exit 2: %s', async (argv, message) => {
    expect(await main(argv, env)).toBe(2)
    expect(stderr).toContain(`postbox: ${message}\n`)
    expect(stderr).toContain('Usage: postbox <command>')
    expect(stdout).toBe('')
    expect(existsSync(join(dir, 'a.db'))).toBe(false)
  })

  it('the right number still runs (stats, keys list, send)', async () => {
    expect(await main(['stats'], env)).toBe(0)
    expect(await main(['keys', 'list'], env)).toBe(0)
    expect(await main(['send', 'a.b', '{"n":1}'], env)).toBe(0)
    expect(stdout).toContain('"deduplicated": false')
    expect(stderr).toBe('')
  })
})
