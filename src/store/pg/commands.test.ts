import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { main } from '../../cli.js'
import { tempDir } from '../../../test/helpers.js'
import { PgBackupUnsupportedError } from './backup.js'
import { PG_URL, freshPgDatabase } from '../../../test/support/pg.js'
import { SCHEMA_VERSION } from '../schema.js'
import { createPgPool } from './pool.js'

describe('postbox backup on PostgreSQL', () => {
  afterEach(() => vi.restoreAllMocks())

  it('names pg_dump and never shows the password', () => {
    const err = new PgBackupUnsupportedError('postgres://pb:s3cret@db.example:5432/postbox')
    expect(err.message).toContain('pg_dump')
    expect(err.message).toContain('pg_restore')
    expect(err.message).toContain('postgres://pb@db.example:5432/postbox')
    expect(err.message).not.toContain('s3cret')
  })

  it('refuses with exit 2 and writes no file', async () => {
    const { dir, cleanup } = tempDir('postbox-pg-backup-')
    let stderr = ''
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => ((stderr += String(chunk)), true))
    try {
      const target = join(dir, 'copy.db')
      const env = { POSTBOX_DATA_DIR: dir, POSTBOX_LOG_LEVEL: 'silent', POSTBOX_DATABASE_URL: 'postgres://pb:s3cret@127.0.0.1:1/postbox' }
      expect(await main(['backup', target], env)).toBe(2)
      expect(stderr).toMatch(/^postbox: postbox backup copies a SQLite file, and this Postbox uses PostgreSQL/)
      expect(stderr).toContain('pg_dump --format=custom')
      expect(stderr).not.toContain('s3cret')
      expect(existsSync(target)).toBe(false)
    } finally {
      cleanup()
    }
  })
})

describe.runIf(PG_URL)('postbox migrate and check on PostgreSQL', () => {
  afterEach(() => vi.restoreAllMocks())

  it('check reports an empty database, migrate creates the schema once, check then finds it sound; a newer one is refused', async () => {
    const db = await freshPgDatabase()
    const { dir, cleanup } = tempDir('postbox-pg-cli-')
    let stdout = ''
    let stderr = ''
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => ((stdout += String(chunk)), true))
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => ((stderr += String(chunk)), true))
    const env = { POSTBOX_DATA_DIR: dir, POSTBOX_LOG_LEVEL: 'silent', POSTBOX_DATABASE_URL: db.url }
    try {
      expect(await main(['check'], env)).toBe(0)
      expect(stdout).toContain(': empty; the schema will be created at start')
      stdout = ''
      expect(await main(['migrate'], env)).toBe(0)
      expect(stdout).toContain(`schema version 0 -> ${SCHEMA_VERSION}`)
      stdout = ''
      expect(await main(['migrate'], env)).toBe(0)
      expect(stdout).toContain(`schema version ${SCHEMA_VERSION} -> ${SCHEMA_VERSION}`)
      stdout = ''
      expect(await main(['check'], env)).toBe(0)
      expect(stdout).toContain(`ok (schema version ${SCHEMA_VERSION}, writable)`)
      // Nothing was written to the data directory: the database is PostgreSQL.
      expect(existsSync(join(dir, 'postbox.db'))).toBe(false)

      const pool = createPgPool(db.url, { max: 1 })
      await pool.query(`UPDATE schema_meta SET value = $1 WHERE name = 'schema_version'`, [SCHEMA_VERSION + 1])
      await pool.end()
      expect(await main(['migrate'], env)).toBe(2)
      expect(await main(['check'], env)).toBe(2)
      expect(stderr).toContain(`database schema version ${SCHEMA_VERSION + 1} is newer than this Postbox supports`)
    } finally {
      cleanup()
      await db.drop()
    }
  })
})
