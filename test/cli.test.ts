import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { SETTINGS } from '../src/config.js'
import { tempDir } from './helpers.js'
import { ensureBuilt, killAllChildren, newAdminKey, runCli, serverEnv } from './support/server-process.js'

describe('postbox CLI', () => {
  let dir: string
  let cleanup: () => void
  let env: Record<string, string>
  beforeAll(async () => {
    await ensureBuilt()
  }, 180_000)
  beforeEach(() => {
    ;({ dir, cleanup } = tempDir('postbox-cli-'))
    env = serverEnv(dir, newAdminKey())
  })
  afterEach(() => cleanup())
  afterAll(async () => killAllChildren())

  it('--help lists every setting with its variable and flag', async () => {
    const { code, output } = await runCli(['--help'], env)
    expect(code).toBe(0)
    for (const s of SETTINGS) {
      expect(output).toContain(s.env)
      expect(output).toContain(s.flag)
    }
  })

  it('bad configuration exits 2 naming the variable (env and flag)', async () => {
    const viaEnv = await runCli(['check'], { ...env, POSTBOX_PORT: 'eighty' })
    expect(viaEnv.code).toBe(2)
    expect(viaEnv.output).toContain('POSTBOX_PORT')
    const viaFlag = await runCli(['check', '--synchronous', 'sometimes'], env)
    expect(viaFlag.code).toBe(2)
    expect(viaFlag.output).toContain('POSTBOX_SYNCHRONOUS')
    const unknown = await runCli(['frobnicate'], env)
    expect(unknown.code).toBe(2)
  })

  it('migrate, check, keys create/list/revoke, send, stats, backup', async () => {
    const migrate = await runCli(['migrate'], env)
    expect(migrate).toMatchObject({ code: 0 })
    expect(migrate.output).toMatch(/schema version 0 -> \d+/)
    const check = await runCli(['check'], env)
    expect(check.code).toBe(0)
    expect(check.output).toContain('ok')
    // check reports what serve would refuse.
    expect((await runCli(['check'], { ...env, POSTBOX_ADMIN_KEY: 'short' })).code).toBe(2)
    expect((await runCli(['check'], { ...env, POSTBOX_ALLOW_NETWORKS: '999.1.1.1/8' })).code).toBe(2)

    const created = await runCli(['keys', 'create', '--role', 'publisher', '--name', 'ci'], env)
    expect(created.code).toBe(0)
    const key = JSON.parse(created.output) as { id: string; key: string; role: string; name: string }
    expect(key).toMatchObject({ role: 'publisher', name: 'ci' })
    expect(key.key).toMatch(/^pbk_/)
    const badRole = await runCli(['keys', 'create', '--role', 'root'], env)
    expect(badRole.code).toBe(2)
    const list = await runCli(['keys', 'list'], env)
    expect(list.code).toBe(0)
    expect(list.output).toContain(key.id)
    expect(list.output).not.toContain(key.key)
    expect((await runCli(['keys', 'revoke', key.id], env)).code).toBe(0)
    expect((await runCli(['keys', 'revoke', 'key_nope'], env)).code).toBe(1)

    const send = await runCli(['send', 'user.created', '{"id":"u_1"}', '--data-dir', dir], env)
    expect(send.code).toBe(0)
    expect(JSON.parse(send.output)).toMatchObject({ type: 'user.created', deduplicated: false })
    expect((await runCli(['send', 'user.created', '{not json'], env)).code).toBe(2)

    const stats = await runCli(['stats'], env)
    expect(stats.code).toBe(0)
    expect(JSON.parse(stats.output)).toMatchObject({ deliveries: { pending: 0 }, endpoints: [], dispatcher: null })

    const file = join(dir, 'copy.db')
    const backup = await runCli(['backup', file], env)
    expect(backup.code).toBe(0)
    expect(existsSync(file)).toBe(true)
    expect(readFileSync(file).subarray(0, 15).toString()).toBe('SQLite format 3')
    // The live database itself is refused: replacing it under a server would lose its writes.
    const onto = await runCli(['backup', join(dir, 'postbox.db')], env)
    expect(onto.code).toBe(2)
    expect(onto.output).toContain('live database')
  }, 60_000)

  it('keys revoke refuses the last admin key', async () => {
    await runCli(['migrate'], env)
    const admin = JSON.parse((await runCli(['keys', 'create', '--role', 'admin'], env)).output) as { id: string }
    const res = await runCli(['keys', 'revoke', admin.id], env)
    expect(res.code).toBe(1)
    expect(res.output).toContain('last_admin')
  }, 30_000)
})
