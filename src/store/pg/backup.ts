import { redactPgUrl } from './url.js'

/**
 * `postbox backup` copies a SQLite file with SQLite's online backup API; a PostgreSQL database is
 * backed up with PostgreSQL's own tools (docs/operations.md, "Upgrades, backup and restore"), which take a consistent snapshot of a live
 * database and restore it: this error says so instead of pretending.
 */
export class PgBackupUnsupportedError extends Error {
  constructor(readonly url: string) {
    const shown = redactPgUrl(url)
    super(
      `postbox backup copies a SQLite file, and this Postbox uses PostgreSQL (${shown}). ` +
        `Back it up with PostgreSQL's own tool, safe while serving: pg_dump --format=custom --file=postbox.dump '${shown}' ` +
        `(restore into an empty database with pg_restore --dbname=<url> postbox.dump).`,
    )
    this.name = 'PgBackupUnsupportedError'
  }
}
