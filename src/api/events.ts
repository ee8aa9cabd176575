import { createRoute, z } from '@hono/zod-openapi'
import { errors } from '../errors.js'
import { EventAccepted, EventBatchAccepted, EventBatchIn, EventIn, EventList, EventOut, EventQuery } from '../webhooks/schemas.js'
import type { EventAcceptedOutput, EventInput } from '../webhooks/types.js'
import { requireRole } from './auth.js'
import { bearerSecurity, idCursorParam, DEFAULT_LIMIT, errorResponses, IdempotencyHeader, idempotencyKey, IdParam, jsonBody, jsonResponse, newRouter, zodDetails } from './common.js'
import type { ApiDeps } from './deps.js'
import { createGroupCommit } from './group-commit.js'

const publisher = requireRole('publisher')
/** The batch envelope only; every event is validated by the service against EventIn. */
const BatchShape = z.object({ events: z.array(z.unknown()).min(1).max(1000) })
const viewer = requireRole('viewer')
const base = { security: bearerSecurity, tags: ['events'] }

const routes = {
  send: createRoute({
    ...base, method: 'post', path: '/v1/events', operationId: 'sendEvent', summary: 'Publish one event (publisher)', middleware: [publisher] as const,
    request: { headers: IdempotencyHeader('The client event id, when the body has no `id`'), body: jsonBody(EventIn) },
    responses: {
      202: jsonResponse(EventAccepted, 'accepted and committed'),
      200: jsonResponse(EventAccepted, 'a repeat of an accepted id: the original, deduplicated'),
      ...errorResponses,
    },
  }),
  // Documented here, validated by the service: each event is checked once (EventIn, in
  // webhooks.events.sendMany) instead of twice, ~15% of a 1,000-event batch's CPU.
  batch: createRoute({
    ...base, method: 'post', path: '/v1/events/batch', operationId: 'sendEventBatch', summary: 'Publish up to 1,000 events in one transaction (publisher)',
    request: { body: jsonBody(EventBatchIn) },
    responses: {
      202: jsonResponse(EventBatchAccepted, 'committed; results in input order'),
      200: jsonResponse(EventBatchAccepted, 'every event was a repeat'),
      ...errorResponses,
    },
  }),
  list: createRoute({
    ...base, method: 'get', path: '/v1/events', operationId: 'listEvents', summary: 'List events newest first, optionally of one type', middleware: [viewer] as const,
    request: { query: EventQuery.extend({ cursor: idCursorParam('evt') }) },
    responses: { 200: jsonResponse(EventList, 'newest first'), ...errorResponses },
  }),
  get: createRoute({
    ...base, method: 'get', path: '/v1/events/{id}', operationId: 'getEvent', summary: 'An event and its deliveries', middleware: [viewer] as const,
    request: { params: IdParam },
    responses: { 200: jsonResponse(EventOut, 'the event'), ...errorResponses },
  }),
}

/** POST /v1/events (group-committed), POST /v1/events/batch, GET /v1/events and GET /v1/events/:id. */
export function eventRoutes(deps: ApiDeps) {
  const ingest = createGroupCommit<EventInput, EventAcceptedOutput>({
    runMany: (inputs) => deps.webhooks.events.sendMany(inputs),
    runOne: (input) => deps.webhooks.events.send(input),
    maxBatch: deps.groupCommitMaxBatch ?? 1000,
  })
  const r = newRouter()
  r.openapi(routes.send, async (c) => {
    const body = c.req.valid('json')
    const id = idempotencyKey(c.req.valid('header')['idempotency-key'], body.id, 'id')
    const input: EventInput = id !== body.id ? { ...body, id } : body
    const result = await ingest.submit(input)
    return c.json(result, result.deduplicated ? 200 : 202)
  })
  r.openAPIRegistry.registerPath(routes.batch)
  r.post('/v1/events/batch', publisher, async (c) => {
    const body = await c.req.json().catch(() => ({}))
    const shape = BatchShape.safeParse(body)
    if (!shape.success) throw errors.validation(zodDetails(shape.error, 'body'))
    const results = c.var.deps.webhooks.events.sendMany(shape.data.events as EventInput[])
    return c.json({ results }, results.every((x) => x.deduplicated) ? 200 : 202)
  })
  r.openapi(routes.get, (c) => c.json(c.var.deps.webhooks.events.get(c.req.valid('param').id), 200))
  r.openapi(routes.list, (c) => {
    const q = c.req.valid('query')
    return c.json(c.var.deps.webhooks.events.list({ ...q, limit: q.limit ?? DEFAULT_LIMIT }), 200)
  })
  return r
}
