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

/** True when `err` is SQLite reporting a full disk or an I/O failure (maps to 503 unavailable). */
export function isStorageUnavailable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^SQLITE_(FULL|IOERR|READONLY|BUSY|LOCKED|CANTOPEN)/.test(code)
}
