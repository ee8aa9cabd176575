/** Options for `openDatabase`. */
export interface OpenOptions {
  synchronous?: 'normal' | 'full'
  readonly?: boolean
  /**
   * What the open does about an older schema: `migrate` it (default; read-only: accept it),
   * require it `current` (SchemaOutdatedError; a new empty file still gets schema.sql), or
   * accept `any` version, newer too (a backup copies the file as it is).
   */
  schema?: 'migrate' | 'current' | 'any'
  /** Called after the open created or upgraded the schema. */
  onMigrate?: (change: { from: number; to: number }) => void
}

/** Thrown when the database file was written by a newer Postbox. */
export class SchemaTooNewError extends Error {
  constructor(
    readonly found: number,
    readonly supported: number,
  ) {
    super(`database schema version ${found} is newer than this Postbox supports (${supported}); upgrade Postbox`)
    this.name = 'SchemaTooNewError'
  }
}

/** Thrown when a command that must not upgrade the schema finds an older one. */
export class SchemaOutdatedError extends Error {
  constructor(
    readonly found: number,
    readonly current: number,
  ) {
    super(`database schema version ${found} is older than this Postbox's (${current}); run \`postbox migrate\` (or \`postbox serve\`) first`)
    this.name = 'SchemaOutdatedError'
  }
}

/** The schema version this code writes, on both backends (each backend's migrations test checks its steps reach it). */
export const SCHEMA_VERSION = 14
