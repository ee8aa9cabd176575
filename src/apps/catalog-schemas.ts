import { z } from '@hono/zod-openapi'
import { MAX_PAGE_SIZE } from '../lib/cursor.js'
import { jsonObject } from '../lib/json-object.js'

/** An event type's name in the catalog: `[a-zA-Z0-9_.:-]{1,200}`, as events' types are. */
export const EventTypeName = z
  .string()
  .regex(/^[a-zA-Z0-9_.:-]{1,200}$/, 'must match [a-zA-Z0-9_.:-]{1,200}')
  .openapi({ param: { name: 'name', in: 'path' }, example: 'invoice.paid' })

/** `PUT /v1/event-types/:name` body: the whole entry (a PUT replaces it). */
export const EventTypePut = z
  .object({
    description: z.string().max(2000).optional(),
    schema: z
      .union([jsonObject('must be a JSON Schema object'), z.boolean()])
      .nullable()
      .optional()
      .openapi({ description: 'A JSON Schema (draft 2020-12) for the event data', example: { type: 'object', required: ['invoice_id'], properties: { invoice_id: { type: 'string' } } } }),
    example: jsonObject('must be an object').nullable().optional().openapi({ example: { invoice_id: 'in_1' } }),
    deprecated: z.boolean().optional(),
    archived: z.boolean().optional(),
  })
  .openapi('EventTypePut')

/** A catalog entry as the API returns it. */
export const EventTypeOut = z
  .object({
    name: z.string(),
    description: z.string(),
    schema: z.union([z.record(z.string(), z.unknown()), z.boolean()]).nullable(),
    example: z.record(z.string(), z.unknown()).nullable(),
    deprecated: z.boolean(),
    archived: z.boolean(),
    version: z.number().int(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi('EventType')

/** `{data, next_cursor}` page of the catalog, by name. */
export const EventTypeList = z.object({ data: z.array(EventTypeOut), next_cursor: z.string().nullable() }).openapi('EventTypeList')

/** `?include_archived=true` accepts only the two spellings. */
const Flag = z.enum(['true', 'false']).transform((v) => v === 'true')

/** `GET /v1/event-types` query. */
export const EventTypeQuery = z.object({
  include_archived: Flag.optional().openapi({ param: { name: 'include_archived', in: 'query' }, description: 'Include archived types' }),
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).optional(),
  cursor: z.string().max(400).optional(),
})

/** `GET /v1/event-types/:name` query. */
export const EventTypeGetQuery = z.object({
  include_archived: Flag.optional().openapi({ param: { name: 'include_archived', in: 'query' }, description: 'Read an archived type too' }),
})
