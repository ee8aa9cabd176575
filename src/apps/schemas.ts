import { z } from '@hono/zod-openapi'
import { MAX_PAGE_SIZE } from '../lib/cursor.js'
import { jsonObject } from '../lib/json-object.js'

/** An application id: the client's own (`[a-zA-Z0-9_.:-]{1,100}`) or a generated `app_…`. */
export const AppId = z
  .string()
  .regex(/^[a-zA-Z0-9_.:-]{1,100}$/, 'must match [a-zA-Z0-9_.:-]{1,100}')
  .openapi({ example: 'acme', description: 'An application (tenant) id; `default` when not given' })

/** `POST /v1/apps` body. */
export const AppCreate = z
  .object({
    id: AppId.optional(),
    name: z.string().min(1).max(200).openapi({ example: 'Acme Inc.' }),
    metadata: jsonObject('must be an object').optional(),
  })
  .openapi('AppCreate')

/** `PATCH /v1/apps/:id` body. */
export const AppUpdate = z
  .object({
    name: z.string().min(1).max(200).optional(),
    metadata: jsonObject('must be an object').optional(),
  })
  .openapi('AppUpdate')

const Counts = z.object({
  endpoints: z.number().int(),
  deliveries: z.object({
    pending: z.number().int(),
    in_flight: z.number().int(),
    success: z.number().int(),
    dead: z.number().int(),
    cancelled: z.number().int(),
  }),
})

/** An application as the API returns it; `counts` only on `GET /v1/apps/:id`. */
export const AppOut = z
  .object({
    id: z.string(),
    name: z.string(),
    metadata: z.record(z.string(), z.unknown()),
    created_at: z.string(),
    updated_at: z.string(),
    counts: Counts.optional(),
  })
  .openapi('App')

/** `{data, next_cursor}` page of applications. */
export const AppList = z.object({ data: z.array(AppOut), next_cursor: z.string().nullable() }).openapi('AppList')

/** The longest portal token lifetime: 7 days. */
export const MAX_PORTAL_TTL_S = 7 * 86_400
/** The default portal token lifetime: 1 hour. */
export const DEFAULT_PORTAL_TTL_S = 3600

/** `POST /v1/apps/:id/portal-tokens` body. */
export const PortalTokenIn = z
  .object({
    ttl_seconds: z.number().int().min(60).max(MAX_PORTAL_TTL_S).optional().openapi({ example: DEFAULT_PORTAL_TTL_S }),
    read_only: z.boolean().optional(),
  })
  .openapi('PortalTokenIn')

/** A new portal token and the link that opens the portal with it. */
export const PortalTokenOut = z
  .object({
    token: z.string(),
    url: z.string().openapi({ description: '<POSTBOX_PUBLIC_URL>/portal#token=<token>: the token travels in the fragment' }),
    expires_at: z.string(),
    read_only: z.boolean(),
    app_id: z.string(),
  })
  .openapi('PortalToken')

/** `?limit=&cursor=` of the apps list. */
export const AppQuery = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).optional(),
  cursor: z.string().max(400).optional(),
})
