import { createRoute, z } from '@hono/zod-openapi'
import { DeliveryList, DeliveryOut, DeliveryQuery } from '../webhooks/schemas.js'
import { errors } from '../errors.js'
import { decodeIdCursor } from '../lib/cursor.js'
import { callerApp, requireAppRole } from './auth.js'
import { bearerSecurity, DEFAULT_LIMIT, ErrorBody, errorResponses, IdParam, jsonResponse, newRouter } from './common.js'

const admin = requireAppRole(['admin'], 'write')
const viewer = requireAppRole(['viewer'], 'read')
const base = { security: bearerSecurity, tags: ['deliveries'] }
const Redelivered = z.object({ id: z.string(), status: z.literal('pending') }).openapi('Redelivered')

const routes = {
  list: createRoute({
    ...base, method: 'get', path: '/v1/deliveries', operationId: 'listDeliveries', summary: 'List deliveries', middleware: [viewer] as const,
    request: { query: DeliveryQuery },
    responses: { 200: jsonResponse(DeliveryList, 'newest first'), ...errorResponses },
  }),
  get: createRoute({
    ...base, method: 'get', path: '/v1/deliveries/{id}', operationId: 'getDelivery', summary: 'A delivery with its attempts', middleware: [viewer] as const,
    request: { params: IdParam },
    responses: { 200: jsonResponse(DeliveryOut, 'the delivery'), ...errorResponses },
  }),
  redeliver: createRoute({
    ...base, method: 'post', path: '/v1/deliveries/{id}/redeliver', operationId: 'redeliverDelivery', summary: 'Send a terminal delivery again (admin)',
    middleware: [admin] as const,
    request: { params: IdParam },
    responses: { 202: jsonResponse(Redelivered, 'queued'), 409: jsonResponse(ErrorBody, 'not_eligible'), ...errorResponses },
  }),
}

/** GET /v1/deliveries, GET /v1/deliveries/:id and POST /v1/deliveries/:id/redeliver. */
export function deliveryRoutes() {
  const r = newRouter()
  r.openapi(routes.list, async (c) => {
    const q = c.req.valid('query')
    if (q.cursor !== undefined && decodeIdCursor(q.cursor, 'dlv') === null) {
      throw errors.validation([{ field: 'cursor', message: 'is not a cursor returned by this list', in: 'query' }])
    }
    return c.json(await c.var.deps.webhooks.deliveries.list({ ...q, limit: q.limit ?? DEFAULT_LIMIT }, callerApp(c)), 200)
  })
  r.openapi(routes.get, async (c) => c.json(await c.var.deps.webhooks.deliveries.get(c.req.valid('param').id, callerApp(c)), 200))
  r.openapi(routes.redeliver, async (c) => c.json(await c.var.deps.webhooks.deliveries.redeliver(c.req.valid('param').id, callerApp(c)), 202))
  return r
}
