import Database from 'better-sqlite3'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { SCHEMA_VERSION } from '../src/store/schema.js'
import { MIGRATIONS } from '../src/store/sqlite/migrations.js'
import { tempDir } from './helpers.js'
import { ensureBuilt, killAllChildren, newAdminKey, runCli, serverEnv, startServer } from './support/server-process.js'

const OLD = SCHEMA_VERSION - 1

/** A database as the previous release left it: schema OLD, WAL, one event and one API key. */
function writeOldDatabase(path: string, version = OLD): void {
  const raw = new Database(path)
  try {
    raw.pragma('journal_mode = WAL')
    for (const step of MIGRATIONS.slice(0, Math.min(version, MIGRATIONS.length))) raw.exec(step)
    raw.pragma(`user_version = ${version}`)
    raw.exec(`INSERT INTO events (id, type, body, created_at) VALUES ('evt_old', 't', '{}', 1);
      INSERT INTO api_keys (id, name, role, hash, prefix, created_at) VALUES ('key_old', 'ops', 'viewer', 'ab', 'pbk_ab', 1);`)
  } finally {
    raw.close()
  }
}

/** user_version and the schema text of a file, read without touching it. */
function schemaOf(path: string): { version: number; sql: string[] } {
  const db = new Database(path, { readonly: true })
  try {
    return {
      version: db.pragma('user_version', { simple: true }) as number,
      sql: db.prepare(`SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name`).pluck().all() as string[],
    }
  } finally {
    db.close()
  }
}

describe('CLI commands other than serve and migrate never upgrade the schema', () => {
  let dir: string
  let cleanup: () => void
  let env: Record<string, string>
  let dbPath: string
  beforeAll(async () => {
    await ensureBuilt()
  }, 180_000)
  beforeEach(() => {
    ;({ dir, cleanup } = tempDir('postbox-cli-nomig-'))
    env = serverEnv(dir, newAdminKey())
    dbPath = join(dir, 'postbox.db')
  })
  afterEach(() => cleanup())
  afterAll(async () => killAllChildren())

  it('stats, keys and send refuse an older schema (exit 2, run migrate) and leave the file as it is', async () => {
    writeOldDatabase(dbPath)
    const before = schemaOf(dbPath)
    const commands = [['stats'], ['keys', 'list'], ['keys', 'create', '--role', 'admin'], ['keys', 'revoke', 'key_old'], ['send', 'user.created', '{}']]
    for (const args of commands) {
      const res = await runCli(args, env)
      expect({ args, code: res.code }).toEqual({ args, code: 2 })
      expect(res.output).toContain(`database schema version ${OLD} is older than this Postbox's (${SCHEMA_VERSION})`)
      expect(res.output).toContain('postbox migrate')
      expect(res.output).toContain(dbPath)
      expect(schemaOf(dbPath)).toEqual(before)
    }
  }, 60_000)

  it('check reports the pending upgrade of every older version and does not perform it', async () => {
    for (let version = 1; version < SCHEMA_VERSION; version++) {
      rmSync(dbPath, { force: true })
      writeOldDatabase(dbPath, version)
      const before = schemaOf(dbPath)
      const res = await runCli(['check'], env)
      expect({ version, code: res.code }).toEqual({ version, code: 0 })
      expect(res.output).toContain(`schema ${version} will be upgraded to ${SCHEMA_VERSION}`)
      expect(schemaOf(dbPath)).toEqual(before)
    }
  }, 60_000)

  it('backup copies an older schema as it is; migrate then upgrades, and the commands work again', async () => {
    writeOldDatabase(dbPath)
    const before = schemaOf(dbPath)
    const file = join(dir, 'before-upgrade.db')
    const backup = await runCli(['backup', file], env)
    expect(schemaOf(dbPath)).toEqual(before)
    expect(schemaOf(file)).toEqual(before)
    expect(backup.code).toBe(0)
    expect(backup.output).toContain(`schema version ${OLD}`)
    const copy = new Database(file, { readonly: true })
    expect(copy.prepare(`SELECT id FROM events`).pluck().all()).toEqual(['evt_old'])
    copy.close()

    const migrate = await runCli(['migrate'], env)
    expect(migrate.code).toBe(0)
    expect(migrate.output).toContain(`schema version ${OLD} -> ${SCHEMA_VERSION}`)
    expect(schemaOf(dbPath).version).toBe(SCHEMA_VERSION)
    const list = await runCli(['keys', 'list'], env)
    expect(list.code).toBe(0)
    expect(list.output).toContain('key_old')
    // The backup taken before the upgrade is still at the old version.
    expect(schemaOf(file).version).toBe(OLD)
  }, 60_000)

  it('a newer schema: backup copies it, the other commands still refuse it', async () => {
    writeOldDatabase(dbPath, SCHEMA_VERSION + 1)
    const file = join(dir, 'newer.db')
    const backup = await runCli(['backup', file], env)
    expect(backup.code).toBe(0)
    expect(schemaOf(file).version).toBe(SCHEMA_VERSION + 1)
    for (const args of [['stats'], ['keys', 'list'], ['send', 't', '{}'], ['migrate'], ['check']]) {
      const res = await runCli(args, env)
      expect({ args, code: res.code }).toEqual({ args, code: 1 })
      expect(res.output).toContain('newer than this Postbox supports')
    }
    expect(schemaOf(dbPath).version).toBe(SCHEMA_VERSION + 1)
  }, 60_000)

  it('a new data dir is still created by keys create (nothing to upgrade), saying so', async () => {
    const created = await runCli(['keys', 'create', '--role', 'admin'], env)
    expect(created.code).toBe(0)
    expect(created.output).toContain(`created a new database at ${dbPath}`)
    expect(schemaOf(dbPath).version).toBe(SCHEMA_VERSION)
  }, 30_000)

  it('send, stats, keys list and keys revoke refuse a data dir without a database (a typo) and create nothing', async () => {
    const empty = tempDir('postbox-cli-typo-')
    try {
      const typo = { ...env, POSTBOX_DATA_DIR: join(empty.dir, 'typo') }
      for (const args of [['send', 'order.paid', '{}'], ['stats'], ['keys', 'list'], ['keys', 'revoke', 'key_x']]) {
        const res = await runCli(args, typo)
        expect(res.code, args.join(' ')).toBe(2)
        expect(res.output).toContain(`no database at ${join(empty.dir, 'typo', 'postbox.db')}`)
      }
      expect(readdirSync(empty.dir)).toEqual([])
    } finally {
      empty.cleanup()
    }
  }, 60_000)

  it('backup into a missing directory names the directory (exit 2); backup without a database creates none', async () => {
    writeOldDatabase(dbPath)
    const missing = join(dir, 'no-such-dir')
    const res = await runCli(['backup', join(missing, 'b.db')], env)
    expect(res.code).toBe(2)
    expect(res.output).toContain(`backup target directory ${missing} does not exist`)
    expect(res.output).not.toContain('ENOENT')
    expect(res.output).not.toContain('.tmp')

    const empty = tempDir('postbox-cli-nodb-')
    try {
      const none = await runCli(['backup', join(empty.dir, 'b.db')], { ...env, POSTBOX_DATA_DIR: join(empty.dir, 'data') })
      expect(none.code).toBe(2)
      expect(none.output).toContain('does not exist: nothing to back up')
      expect(readdirSync(empty.dir)).toEqual([])
    } finally {
      empty.cleanup()
    }
  }, 30_000)

  it('serve upgrades an older schema and logs one line saying so, and none when nothing changes', async () => {
    writeOldDatabase(dbPath)
    const first = await startServer(env)
    const upgraded = first.output().split('\n').filter((l) => l.includes('database schema upgraded'))
    await first.stop()
    expect(upgraded).toHaveLength(1)
    expect(JSON.parse(upgraded[0]!)).toMatchObject({ schema_from: OLD, schema_to: SCHEMA_VERSION, db: dbPath })
    expect(schemaOf(dbPath).version).toBe(SCHEMA_VERSION)
    const second = await startServer(env)
    const lines = second.output()
    await second.stop()
    expect(lines).not.toContain('database schema')
    expect(existsSync(dbPath)).toBe(true)
  }, 60_000)
})
