import { createRoute, z } from '@hono/zod-openapi'
import { EventTypeGetQuery, EventTypeList, EventTypeName, EventTypeOut, EventTypePut, EventTypeQuery } from '../apps/catalog-schemas.js'
import { requireAppRole, requireRole } from './auth.js'
import { bearerSecurity, ErrorBody, errorResponses, jsonBody, jsonResponse, newRouter } from './common.js'

// The catalog is the operator's to write; every caller of the API may read it, portal tokens too.
const admin = requireRole('admin')
// The portal reads the list only; GET /v1/event-types/:name is for keys (scoped ones too).
const lister = requireAppRole(['viewer'], 'read')
const reader = requireAppRole(['viewer'])
const base = { security: bearerSecurity, tags: ['event-types'] }
const NameParam = z.object({ name: EventTypeName })

const routes = {
  put: createRoute({
    ...base, method: 'put', path: '/v1/event-types/{name}', operationId: 'putEventType',
    summary: 'Create or replace an event type, with an optional JSON Schema for its data (admin)', middleware: [admin] as const,
    request: { params: NameParam, body: jsonBody(EventTypePut, false) },
    responses: {
      200: jsonResponse(EventTypeOut, 'stored'),
      ...errorResponses,
      422: jsonResponse(ErrorBody, 'schema_validation_timeout or schema_validation_out_of_memory (checking the example in a validation worker)'),
    },
  }),
  list: createRoute({
    ...base, method: 'get', path: '/v1/event-types', operationId: 'listEventTypes', summary: 'The event-type catalog, by name', middleware: [lister] as const,
    request: { query: EventTypeQuery },
    responses: { 200: jsonResponse(EventTypeList, 'by name'), ...errorResponses },
  }),
  get: createRoute({
    ...base, method: 'get', path: '/v1/event-types/{name}', operationId: 'getEventType', summary: 'One event type', middleware: [reader] as const,
    request: { params: NameParam, query: EventTypeGetQuery },
    responses: { 200: jsonResponse(EventTypeOut, 'the event type'), ...errorResponses },
  }),
}

/** PUT /v1/event-types/:name, GET /v1/event-types and GET /v1/event-types/:name. */
export function eventTypeRoutes() {
  const r = newRouter()
  r.openapi(routes.put, async (c) => c.json(await c.var.deps.webhooks.eventTypes.put(c.req.valid('param').name, c.req.valid('json') ?? {}), 200))
  r.openapi(routes.list, async (c) => {
    const q = c.req.valid('query')
    return c.json(await c.var.deps.webhooks.eventTypes.list({ limit: q.limit, cursor: q.cursor ?? null, includeArchived: q.include_archived ?? false }), 200)
  })
  r.openapi(routes.get, async (c) => c.json(await c.var.deps.webhooks.eventTypes.get(c.req.valid('param').name, { includeArchived: c.req.valid('query').include_archived ?? false }), 200))
  return r
}
