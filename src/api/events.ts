import { createRoute, z } from '@hono/zod-openapi'
import { errors } from '../errors.js'
import { EventAccepted, EventBatchAccepted, EventBatchIn, EventIn, EventList, EventOut, EventQuery } from '../webhooks/schemas.js'
import type { EventAcceptedOutput, EventInput, PreparedEvent } from '../webhooks/types.js'
import { callerApp, requireAppRole } from './auth.js'
import { bearerSecurity, idCursorParam, DEFAULT_LIMIT, ErrorBody, errorResponses, IdempotencyHeader, idempotencyKey, IdParam, jsonBody, jsonResponse, newRouter, zodDetails } from './common.js'
import type { ApiDeps } from './deps.js'
import { createGroupCommit } from './group-commit.js'

// Publishing works for scoped keys (to their own application); portal tokens only read events.
const publisher = requireAppRole(['publisher'])
/** The batch envelope only; every event is validated by the service against EventIn. */
const BatchShape = z.object({ events: z.array(z.unknown()).min(1).max(1000) })
const viewer = requireAppRole(['viewer'], 'read')
const base = { security: bearerSecurity, tags: ['events'] }

const routes = {
  send: createRoute({
    ...base, method: 'post', path: '/v1/events', operationId: 'sendEvent', summary: 'Publish one event (publisher)', middleware: [publisher] as const,
    request: { headers: IdempotencyHeader('The client event id, when the body has no `id`'), body: jsonBody(EventIn) },
    responses: {
      202: jsonResponse(EventAccepted, 'accepted and committed'),
      200: jsonResponse(EventAccepted, 'a repeat of an accepted id: the original, deduplicated'),
      ...errorResponses,
      422: jsonResponse(ErrorBody, "schema_validation_timeout or schema_validation_out_of_memory (the type's schema, docs/applications.md)"),
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
  // The caller's application is already in each input (a scoped key's replaces the body's).
  // Each event is prepared (shape, application, catalog) on its own first, so a slow schema
  // holds only its own caller; the group commit only stores.
  const ingest = createGroupCommit<PreparedEvent, EventAcceptedOutput>({
    runMany: (events) => deps.webhooks.events.sendPrepared(events),
    runOne: async (event) => (await deps.webhooks.events.sendPrepared([event]))[0]!,
    maxBatch: deps.groupCommitMaxBatch ?? 1000,
  })
  const r = newRouter()
  r.openapi(routes.send, async (c) => {
    const body = c.req.valid('json')
    const id = idempotencyKey(c.req.valid('header')['idempotency-key'], body.id, 'id')
    const scope = callerApp(c)
    const withId: EventInput = id !== body.id ? { ...body, id } : body
    const input: EventInput = scope !== null ? { ...withId, app_id: scope } : withId
    const result = await ingest.submit(await deps.webhooks.events.prepare(input))
    return c.json(result, result.deduplicated ? 200 : 202)
  })
  r.openAPIRegistry.registerPath(routes.batch)
  r.post('/v1/events/batch', publisher, async (c) => {
    const body = await c.req.json().catch(() => ({}))
    const shape = BatchShape.safeParse(body)
    if (!shape.success) throw errors.validation(zodDetails(shape.error, 'body'))
    const results = await c.var.deps.webhooks.events.sendBatch(shape.data.events, callerApp(c))
    return c.json({ results }, results.every((x) => 'deduplicated' in x && x.deduplicated) ? 200 : 202)
  })
  r.openapi(routes.get, async (c) => c.json(await c.var.deps.webhooks.events.get(c.req.valid('param').id, callerApp(c)), 200))
  r.openapi(routes.list, async (c) => {
    const q = c.req.valid('query')
    return c.json(await c.var.deps.webhooks.events.list({ ...q, limit: q.limit ?? DEFAULT_LIMIT }, callerApp(c)), 200)
  })
  return r
}
