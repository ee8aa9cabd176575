import { createRoute, z } from '@hono/zod-openapi'
import { RequestAccepted, RequestIn, RequestList, RequestOut, RequestQuery } from '../webhooks/request-schemas.js'
import { errors } from '../errors.js'
import { appFilter, appForWrite, visibleTo } from '../apps/service.js'
import { callerApp, mayReadSecrets, requireAppRole } from './auth.js'
import { maskHeaders } from '../webhooks/present.js'
import { bearerSecurity, DEFAULT_LIMIT, ErrorBody, errorResponses, idCursorParam, IdempotencyHeader, idempotencyKey, IdParam, jsonBody, jsonResponse, newRouter } from './common.js'
import type { ApiEnv } from './deps.js'
import type { Context } from 'hono'

// Scoped keys act inside their application, as for events; portal tokens have no request routes.
const publisher = requireAppRole(['publisher'])
const admin = requireAppRole([])
const viewer = requireAppRole(['viewer', 'publisher'])
const base = { security: bearerSecurity, tags: ['requests'] }
const Redelivered = z.object({ id: z.string(), status: z.literal('pending') }).openapi('RequestRedelivered')

const routes = {
  create: createRoute({
    ...base, method: 'post', path: '/v1/requests', summary: 'Make an HTTP request durably, now or later (publisher)', operationId: 'createRequest',
    middleware: [publisher] as const,
    request: { headers: IdempotencyHeader('The dedup_key, when the body has none'), body: jsonBody(RequestIn) },
    responses: {
      202: jsonResponse(RequestAccepted, 'accepted and committed'),
      200: jsonResponse(RequestAccepted, 'a repeat of (app_id, dedup_key): the original, deduplicated'),
      422: jsonResponse(ErrorBody, 'destination_not_allowed'),
      ...errorResponses,
    },
  }),
  list: createRoute({
    ...base, method: 'get', path: '/v1/requests', summary: 'List requests newest first', operationId: 'listRequests', middleware: [viewer] as const,
    request: { query: RequestQuery.extend({ cursor: idCursorParam('req') }) },
    responses: { 200: jsonResponse(RequestList, 'newest first'), ...errorResponses },
  }),
  get: createRoute({
    ...base, method: 'get', path: '/v1/requests/{id}', summary: 'A request, its status and every attempt', operationId: 'getRequest',
    middleware: [viewer] as const,
    request: { params: IdParam },
    responses: { 200: jsonResponse(RequestOut, 'the request'), ...errorResponses },
  }),
  redeliver: createRoute({
    ...base, method: 'post', path: '/v1/requests/{id}/redeliver', summary: 'Send a finished request again (admin)', operationId: 'redeliverRequest',
    middleware: [admin] as const,
    request: { params: IdParam },
    responses: { 202: jsonResponse(Redelivered, 'queued'), 409: jsonResponse(ErrorBody, 'not_eligible'), ...errorResponses },
  }),
  cancel: createRoute({
    ...base, method: 'delete', path: '/v1/requests/{id}', summary: 'Cancel a pending request (publisher)', operationId: 'cancelRequest',
    middleware: [publisher] as const,
    request: { params: IdParam },
    responses: { 200: jsonResponse(RequestOut, 'cancelled'), 409: jsonResponse(ErrorBody, 'not_eligible'), ...errorResponses },
  }),
}

/** The request service, or 404 when this Postbox has none. */
const service = (c: Context<ApiEnv>) => {
  const s = c.var.deps.requests
  if (!s) throw errors.notFound('Route')
  return s
}

/** The request as the caller may see it: another application's is 404, as if it did not exist. */
async function visible(c: Context<ApiEnv>, id: string) {
  const req = await service(c).get(id)
  if (!visibleTo(callerApp(c), req.app_id)) throw errors.notFound('Request')
  return req
}

/** A request as the caller may see it: custom header values (an upstream `Authorization`) are masked unless it may read secrets. */
const shown = <R extends { headers: Record<string, string> }>(c: Context<ApiEnv>, req: R): R =>
  mayReadSecrets(c) ? req : { ...req, headers: maskHeaders(req.headers) }

/** POST/GET /v1/requests, GET/DELETE /v1/requests/:id and POST /v1/requests/:id/redeliver (docs/requests.md). */
export function requestRoutes() {
  const r = newRouter()
  r.openapi(routes.create, async (c) => {
    const body = c.req.valid('json')
    const dedup = idempotencyKey(c.req.valid('header')['idempotency-key'], body.dedup_key, 'dedup_key')
    const appId = await appForWrite(c.var.deps.store, callerApp(c), body.app_id)
    const out = await service(c).create(dedup !== body.dedup_key ? { ...body, dedup_key: dedup } : body, { appId })
    return c.json(out, out.deduplicated ? 200 : 202)
  })
  r.openapi(routes.list, async (c) => {
    const q = c.req.valid('query')
    const appId = await appFilter(c.var.deps.store, callerApp(c), q.app_id)
    const page = await service(c).list({ ...q, ...(appId !== undefined ? { app_id: appId } : {}), limit: q.limit ?? DEFAULT_LIMIT })
    return c.json({ ...page, data: page.data.map((req) => shown(c, req)) }, 200)
  })
  r.openapi(routes.get, async (c) => c.json(shown(c, await visible(c, c.req.valid('param').id)), 200))
  r.openapi(routes.redeliver, async (c) => c.json(await service(c).redeliver((await visible(c, c.req.valid('param').id)).id), 202))
  r.openapi(routes.cancel, async (c) => c.json(shown(c, await service(c).cancel((await visible(c, c.req.valid('param').id)).id)), 200))
  return r
}
