import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { main } from '../../cli.js'
import { tempDir } from '../../../test/helpers.js'
import { PgBackupUnsupportedError } from './backup.js'

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
