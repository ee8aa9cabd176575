import { z } from '@hono/zod-openapi'
import { MAX_PAGE_SIZE } from '../lib/cursor.js'
import { jsonObject } from '../lib/json-object.js'
import { decimalInt } from '../lib/query-number.js'
import { Delay, DeliverAt } from './deliver-at.js'
import { AttemptOut, RetryDelay } from './schemas.js'

/** An application id (`[a-zA-Z0-9_.:-]{1,100}`); `default` when absent. */
export const AppId = z.string().regex(/^[a-zA-Z0-9_.:-]{1,100}$/, 'must match [a-zA-Z0-9_.:-]{1,100}')

/** The methods a request may use. */
export const RequestMethod = z.enum(['POST', 'PUT', 'PATCH', 'DELETE', 'GET'])

const Label = z.string().min(1).max(200)
const headerValue = (v: unknown): v is string => typeof v === 'string' && v.length <= 4096

/** `POST /v1/requests` body (docs/requests.md). */
export const RequestIn = z
  .object({
    url: z.string().min(1).max(2048).openapi({ example: 'https://api.example.com/orders/42/ship' }),
    method: RequestMethod.optional().openapi({ description: 'Default POST' }),
    headers: jsonObject('must be an object of strings of at most 4096 characters', headerValue)
      .optional()
      .openapi({ additionalProperties: { type: 'string', maxLength: 4096 } }),
    body: z.unknown().optional().openapi({ description: 'A string, sent as is, or any JSON value, sent as application/json' }),
    dedup_key: Label.optional().openapi({ description: 'A repeat with the same key (per application) returns the original' }),
    source: Label.optional(),
    ref_id: Label.optional(),
    timeout_ms: z.number().int().min(1000).max(60_000).optional(),
    retry_schedule: z.array(RetryDelay).min(1).max(50).optional().openapi({ example: ['1s', '10s', '1m'] }),
    signing_secret: z.string().min(1).max(200).optional().openapi({ description: 'whsec_…: sign with Standard Webhooks; webhook-id is the request id' }),
    deliver_at: DeliverAt.optional(),
    delay: Delay.optional(),
    app_id: AppId.optional(),
  })
  .openapi('RequestIn')

/** A request as the API returns it; `attempts` is present on `GET /v1/requests/:id`. */
export const RequestOut = z
  .object({
    id: z.string(),
    app_id: z.string(),
    delivery_id: z.string(),
    method: RequestMethod,
    url: z.string(),
    headers: z.record(z.string(), z.string()),
    body: z.unknown(),
    signed: z.boolean(),
    source: z.string().nullable(),
    ref_id: z.string().nullable(),
    dedup_key: z.string().nullable(),
    timeout_ms: z.number().int(),
    retry_schedule: z.array(z.number().int()).nullable(),
    status: z.enum(['pending', 'in_flight', 'success', 'dead', 'cancelled']),
    attempt_count: z.number().int(),
    max_attempts: z.number().int(),
    next_attempt_at: z.string().nullable(),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    deliver_at: z.string(),
    created_at: z.string(),
    completed_at: z.string().nullable(),
    attempts: z.array(AttemptOut).optional(),
  })
  .openapi('RequestOut')

/** The answer to `POST /v1/requests`: the request, and whether it repeated an earlier one. */
export const RequestAccepted = RequestOut.extend({ deduplicated: z.boolean() }).openapi('RequestAccepted')

/** `{data, next_cursor}` page of requests. */
export const RequestList = z.object({ data: z.array(RequestOut), next_cursor: z.string().nullable() }).openapi('RequestList')

/** `GET /v1/requests` filters (the cursor is added by the route). */
export const RequestQuery = z.object({
  status: z.enum(['pending', 'in_flight', 'success', 'dead', 'cancelled']).optional().openapi({ param: { name: 'status', in: 'query' } }),
  source: Label.optional().openapi({ param: { name: 'source', in: 'query' } }),
  ref_id: Label.optional().openapi({ param: { name: 'ref_id', in: 'query' } }),
  app_id: AppId.optional().openapi({ param: { name: 'app_id', in: 'query' } }),
  limit: decimalInt(1, MAX_PAGE_SIZE).optional().openapi({ param: { name: 'limit', in: 'query' } }),
})
