/**
 * schema.sql, consolidated: the build writes `dist/schema-fresh.sql`, one CREATE per table,
 * index and trigger as schema.sql leaves them, so a new file is created without replaying
 * schema.sql's history of ALTERs, rebuilds and backfills (each ALTER re-parses the whole schema:
 * ~13 ms against ~4.5 ms here; docs/performance.md). schema.sql stays the truth: the consolidated
 * text names the hash of the schema.sql it was made from and is used only with that very file.
 */
import Database from 'better-sqlite3'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { findPackageFile } from '../../lib/package-file.js'

/** The name of the consolidated schema the build writes into dist/. */
export const FRESH_SCHEMA_FILE = 'schema-fresh.sql'

const HASH_LINE = '-- schema.sql sha256 '

/** The default application's row, the only row a new file holds (as schema.sql's v9 step writes it). */
const DEFAULT_APP = `INSERT INTO apps (id, name, created_at, updated_at)
  VALUES ('default', 'Default', CAST(unixepoch('subsec') * 1000 AS INTEGER), CAST(unixepoch('subsec') * 1000 AS INTEGER));`

/** The sha256 of a schema text, as the consolidated file's first line names it. */
function hashOf(schemaSql: string): string {
  return createHash('sha256').update(schemaSql).digest('hex')
}

/**
 * Builds the consolidated schema of `schemaSql`: runs it in memory and writes out what it made, in
 * creation order. Throws when schema.sql leaves rows this cannot write (anything but the
 * default application), so a schema step that seeds data fails the build instead of being lost.
 */
export function consolidateSchema(schemaSql: string): string {
  const db = new Database(':memory:')
  try {
    db.exec(schemaSql)
    const objects = db.prepare(`SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid`).pluck().all() as string[]
    const tables = db.prepare(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).pluck().all() as string[]
    for (const t of tables) {
      const rows = db.prepare(`SELECT * FROM "${t}"`).all() as Record<string, unknown>[]
      const defaultApp = t === 'apps' && rows.length === 1 && rows[0]!.id === 'default' && rows[0]!.name === 'Default' && rows[0]!.metadata === '{}' && rows[0]!.deleted_at === null
      if (rows.length > 0 && !defaultApp) throw new Error(`schema.sql leaves rows in ${t} that ${FRESH_SCHEMA_FILE} cannot write`)
    }
    const version = db.pragma('user_version', { simple: true }) as number
    return [
      `${HASH_LINE}${hashOf(schemaSql)}`,
      '-- Written by the build from schema.sql (src/store/sqlite/fresh-schema.ts); do not edit.',
      ...objects.map((sql) => `${sql};`),
      DEFAULT_APP,
      `PRAGMA user_version = ${version};`,
      '',
    ].join('\n')
  } finally {
    db.close()
  }
}

/** The consolidated text if it was made from `schemaSql`, else `schemaSql` itself. */
export function pickFreshSchema(schemaSql: string, consolidated: string | null): string {
  if (consolidated === null || !consolidated.startsWith(HASH_LINE)) return schemaSql
  const end = consolidated.indexOf('\n')
  return consolidated.slice(HASH_LINE.length, end) === hashOf(schemaSql) ? consolidated : schemaSql
}

/** What a new file is created from: dist/schema-fresh.sql when it matches schema.sql, else schema.sql. */
export function freshSchemaSql(schemaSql: string): string {
  const file = findPackageFile(FRESH_SCHEMA_FILE)
  return pickFreshSchema(schemaSql, file === null ? null : readFileSync(file, 'utf8'))
}
