/**
 * What `postbox migrate` and `postbox check` do on PostgreSQL (docs/operations.md): the same
 * answers as on a SQLite file, from the database at POSTBOX_DATABASE_URL.
 */
import { SCHEMA_VERSION, SchemaTooNewError } from '../schema.js'
import { migratePg, pgSchemaVersion } from './migrations.js'
import { createPgPool, redactPgUrl } from './pool.js'
import { createPgStatsStore } from './stats.js'

/** Brings the database's schema to this Postbox's version (under the migration lock); the versions before and after. */
export async function migratePgDatabase(url: string): Promise<{ from: number; to: number }> {
  const pool = createPgPool(url, { max: 1, applicationName: 'postbox-migrate' })
  try {
    return await migratePg(pool)
  } finally {
    await pool.end()
  }
}

/** What `postbox check` found: a line to print, and the problems (none when the database is fine). */
export interface PgCheckReport {
  line: string
  problems: string[]
}

/** Checks the database without changing it: reachable, a Postbox schema not newer than this one, its tables there, writable. */
export async function checkPgDatabase(url: string): Promise<PgCheckReport> {
  const shown = redactPgUrl(url)
  const pool = createPgPool(url, { max: 1, applicationName: 'postbox-check' })
  try {
    const version = await pgSchemaVersion(pool)
    if (version === null) return { line: `database ${shown}: not a Postbox database`, problems: ['tables but no Postbox schema_meta'] }
    if (version === 0) return { line: `database ${shown}: empty; the schema will be created at start (or by \`postbox migrate\`)`, problems: [] }
    if (version > SCHEMA_VERSION) throw new SchemaTooNewError(version, SCHEMA_VERSION)
    const stats = createPgStatsStore(pool)
    const problems = await stats.integrityCheck()
    if (problems.length > 0) return { line: `database ${shown}: integrity check failed`, problems }
    await stats.probeWritable()
    const note = version < SCHEMA_VERSION ? `; schema ${version} will be upgraded to ${SCHEMA_VERSION} by \`postbox migrate\` or \`serve\`` : ''
    return { line: `database ${shown}: ok (schema version ${version}, writable${note})`, problems: [] }
  } finally {
    await pool.end()
  }
}
