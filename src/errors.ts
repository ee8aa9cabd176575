/** The HTTP statuses Postbox answers errors with. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 405 | 409 | 413 | 415 | 422 | 429 | 500 | 503

/**
 * The one error type that crosses layers. `code` is a stable snake_case string that clients
 * may branch on; `message` is for humans; `details` is optional structured context.
 */
export class AppError extends Error {
  constructor(
    readonly code: string,
    readonly status: ErrorStatus,
    message: string,
    readonly details?: unknown,
    /** Response headers the error carries (`Allow` on a 405). */
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(message)
    this.name = 'AppError'
  }
}

/** Shorthands for the common errors of the catalogue (docs/api.md, "Errors"). */
export const errors = {
  invalidJson: (msg = 'Request body is not valid JSON') => new AppError('invalid_json', 400, msg),
  validation: (details: unknown, msg = 'Request validation failed') => new AppError('validation_failed', 400, msg, details),
  unauthorized: (msg = 'Missing credentials') => new AppError('unauthorized', 401, msg),
  invalidToken: (msg = 'Invalid or revoked credentials') => new AppError('invalid_token', 401, msg),
  forbidden: (msg = 'This key may not perform this action') => new AppError('forbidden', 403, msg),
  notFound: (what = 'Resource') => new AppError('not_found', 404, `${what} not found`),
  methodNotAllowed: (allow: readonly string[]) =>
    new AppError('method_not_allowed', 405, `This route takes ${allow.join(', ')}`, { allow }, { allow: allow.join(', ') }),
  conflict: (msg: string) => new AppError('conflict', 409, msg),
  notEligible: (msg: string) => new AppError('not_eligible', 409, msg),
  payloadTooLarge: (limit: number) => new AppError('payload_too_large', 413, `Request body exceeds ${limit} bytes`),
  unsupportedMediaType: () => new AppError('unsupported_media_type', 415, 'Content-Type must be application/json'),
  destinationNotAllowed: (msg = 'Destination address is not allowed') => new AppError('destination_not_allowed', 422, msg),
  rateLimited: () => new AppError('rate_limited', 429, 'Too many requests'),
  unavailable: (msg = 'Service unavailable; nothing was accepted') => new AppError('unavailable', 503, msg),
}

/** The `code` of a thrown database or socket error (SQLite's SQLITE_…, PostgreSQL's SQLSTATE, Node's E…). */
const codeOf = (err: unknown): unknown => (err as { code?: unknown } | null)?.code

/**
 * PostgreSQL's SQLSTATEs for a server that cannot take the work now: connection exceptions (08),
 * insufficient resources (53: disk full, out of memory, too many connections), operator
 * intervention (57P01–57P03: shutdown, crash, cannot connect now), a database that is gone or
 * refuses connections (3D000, 55000 with ALLOW_CONNECTIONS false) and refused credentials (28).
 */
const PG_UNAVAILABLE = /^(08|53|57P0[1-3]|3D000|28000|28P01)/
/** Socket errors node-postgres passes on when the server is unreachable or the connection dies. */
const NET_UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN'])

/**
 * True when `err` says the database cannot take the work now (maps to 503 unavailable): SQLite
 * reporting a full disk, an I/O failure or a lock; PostgreSQL unreachable, shutting down, out of
 * resources, or its connection lost (docs/api.md, "Errors").
 */
export function isStorageUnavailable(err: unknown): boolean {
  const code = codeOf(err)
  if (typeof code === 'string') {
    if (/^SQLITE_(FULL|IOERR|READONLY|BUSY|LOCKED|CANTOPEN)/.test(code)) return true
    if (PG_UNAVAILABLE.test(code) || NET_UNAVAILABLE.has(code)) return true
    if (code === '55000' && err instanceof Error && /not currently accepting connections/.test(err.message)) return true
  }
  // node-postgres's own errors for a dropped connection or a full pool carry no code.
  return err instanceof Error && /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/.test(err.message)
}

/**
 * True when PostgreSQL refused a text value it cannot store: a NUL character (U+0000) in a text
 * column (22021) or in a JSON string (22P05). SQLite stores such text; PostgreSQL answers 400.
 */
export function isUnstorableText(err: unknown): boolean {
  const code = codeOf(err)
  return code === '22021' || code === '22P05'
}

/** True when `err` is a unique index refusing a row (PostgreSQL 23505, SQLite's UNIQUE or PRIMARY KEY constraint). */
export function isUniqueViolation(err: unknown): boolean {
  const code = codeOf(err)
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}
