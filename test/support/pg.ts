import pg from 'pg'
import { randomBytes } from 'node:crypto'

/**
 * The PostgreSQL server the tests use: POSTBOX_TEST_PG_URL (`.ci/run` starts one and sets it).
 * Undefined when there is none; with POSTBOX_REQUIRE_PG=1 (CI) that is an error, so nothing is
 * skipped where PostgreSQL should be.
 */
export const PG_URL: string | undefined = process.env.POSTBOX_TEST_PG_URL || undefined
if (!PG_URL && process.env.POSTBOX_REQUIRE_PG === '1') throw new Error('POSTBOX_REQUIRE_PG=1 but POSTBOX_TEST_PG_URL is not set')

/**
 * A fresh database on the test server: its URL, and `drop()` to remove it. Empty, or a copy of
 * `opts.template` (a database nobody is connected to, e.g. the migrated one of test/support/pg-template.ts).
 */
export async function freshPgDatabase(opts: { template?: string } = {}): Promise<{ url: string; drop: () => Promise<void> }> {
  if (!PG_URL) throw new Error('POSTBOX_TEST_PG_URL is not set')
  const name = `pb_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: PG_URL })
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE ${name}${opts.template !== undefined ? ` TEMPLATE ${pg.escapeIdentifier(opts.template)}` : ''}`)
  } finally {
    await admin.end()
  }
  const url = new URL(PG_URL)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: PG_URL })
      await c.connect()
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await c.end()
      }
    },
  }
}
