import { OpenAPIHono, z, type Hook } from '@hono/zod-openapi'
import { decimalInt } from '../lib/query-number.js'
import type { ZodError } from 'zod'
import { errors } from '../errors.js'
import { decodeCursor, decodeIdCursor, DEFAULT_PAGE_SIZE, MAX_CURSOR_LENGTH, MAX_PAGE_SIZE } from '../lib/cursor.js'
import type { ApiEnv } from './deps.js'

/** One field problem in a `validation_failed` error's `details`. */
export interface FieldIssue {
  field: string
  message: string
  in?: string
}

/** Turns a ZodError into the `details` list of `validation_failed`: one entry per field. */
export function zodDetails(err: ZodError, target?: string): FieldIssue[] {
  return err.issues.slice(0, 50).map((i) => ({
    field: i.path.length ? i.path.map(String).join('.') : '(root)',
    message: i.message,
    ...(target ? { in: target } : {}),
  }))
}

/**
 * The OpenAPIHono `defaultHook`: every failed zod validation becomes 400 `validation_failed`.
 * No query parameter takes a list, so one given twice (`?limit=1&limit=2`, which the validator
 * sees as an array) is named as such instead of a type error about the array.
 */
export const validationHook: Hook<unknown, ApiEnv, string, undefined> = (result) => {
  if (result.success) return undefined
  const details = zodDetails(result.error, result.target === 'json' ? 'body' : result.target)
  if (result.target !== 'query') throw errors.validation(details)
  const input = (result as { data?: unknown }).data
  const values = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>
  const top = (field: string): string => field.split('.')[0]!
  const repeated = [...new Set(details.map((d) => top(d.field)))].filter((k) => Array.isArray(values[k]))
  if (repeated.length === 0) throw errors.validation(details)
  const others = details.filter((d) => !repeated.includes(top(d.field)))
  throw errors.validation([...repeated.map((field) => ({ field, message: `given more than once; give ${field} once`, in: 'query' })), ...others])
}

/** A router for one resource family; mount it with `app.route('/', router)`. */
export function newRouter(): OpenAPIHono<ApiEnv> {
  return new OpenAPIHono<ApiEnv>({ defaultHook: validationHook })
}

/** The error body every non-2xx response carries. */
export const ErrorBody = z
  .object({
    error: z.object({
      code: z.string().openapi({ example: 'validation_failed' }),
      message: z.string(),
      details: z.unknown().optional(),
    }),
  })
  .openapi('Error')

/** An opaque list cursor that `decode` accepts: only values this list handed out (`next_cursor`). */
export const cursorParam = (decode: (cursor: string) => unknown) =>
  z
    .string()
    .max(MAX_CURSOR_LENGTH)
    .refine((c) => decode(c) !== null, 'is not a cursor returned by this list')
    .optional()
    .openapi({ param: { name: 'cursor', in: 'query' } })

/** Any cursor this API hands out; the list itself refuses another list's kind (400). */
export const CursorParam = cursorParam(decodeCursor)
/** The cursor of a list read by the ids of `prefix` (deliveries, events, endpoints, keys). */
export const idCursorParam = (prefix: string) => cursorParam((c) => decodeIdCursor(c, prefix))

/** `?limit=&cursor=` of every list. */
export const PageQuery = z.object({
  limit: decimalInt(1, MAX_PAGE_SIZE).optional().openapi({ param: { name: 'limit', in: 'query' }, example: DEFAULT_PAGE_SIZE }),
  cursor: CursorParam,
})

/**
 * The `Idempotency-Key` header of the two routes that honour it (POST /v1/events and
 * /v1/notifications), where it stands for the body's own dedup field; `description` says which.
 */
export const IdempotencyHeader = (description: string) =>
  z.object({
    'idempotency-key': z
      .string()
      .min(1)
      .max(200)
      .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
      .optional()
      .openapi({ param: { name: 'idempotency-key', in: 'header' }, description }),
  })

/**
 * The key of a request that sent both the header and the body field: the same value twice is
 * one key, different values are 400 `validation_failed` naming the body field.
 */
export function idempotencyKey(header: string | undefined, body: string | undefined, field: string): string | undefined {
  if (header !== undefined && body !== undefined && header !== body) {
    throw errors.validation([{ field, message: 'differs from the Idempotency-Key header', in: 'body' }])
  }
  return body ?? header
}

/** A `:id` path parameter. */
export const IdParam = z.object({
  id: z.string().min(1).max(200).openapi({ param: { name: 'id', in: 'path' } }),
})

/** The default list size. */
export const DEFAULT_LIMIT = DEFAULT_PAGE_SIZE

/** JSON request body spec for createRoute. */
export function jsonBody<T extends z.ZodType>(schema: T, required = true) {
  return { content: { 'application/json': { schema } }, required }
}

/** JSON response spec for createRoute. */
export function jsonResponse<T extends z.ZodType>(schema: T, description: string) {
  return { content: { 'application/json': { schema } }, description }
}

/** The error responses every authenticated route may give, for the OpenAPI document. */
export const errorResponses = {
  400: jsonResponse(ErrorBody, 'invalid_json or validation_failed'),
  401: jsonResponse(ErrorBody, 'unauthorized or invalid_token'),
  403: jsonResponse(ErrorBody, 'forbidden'),
  404: jsonResponse(ErrorBody, 'not_found'),
  413: jsonResponse(ErrorBody, 'payload_too_large'),
  415: jsonResponse(ErrorBody, 'unsupported_media_type'),
  503: jsonResponse(ErrorBody, 'unavailable'),
} as const

/** The bearer-key security requirement for the OpenAPI document. */
export const bearerSecurity = [{ bearer: [] }]
