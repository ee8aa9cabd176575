import { createRoute, z } from '@hono/zod-openapi'
import type { Context } from 'hono'
import type { ApiEnv } from './deps.js'
import {
  EndpointCreate,
  EndpointList,
  EndpointOut,
  EndpointUpdate,
  EventAccepted,
  RecoverIn,
  RecoverOut,
  RotateSecretIn,
  SecretOut,
  TestIn,
} from '../webhooks/schemas.js'
import { AppId } from '../apps/schemas.js'
import { callerApp, mayReadSecrets, requireAppRole } from './auth.js'
import { maskHeaders } from '../webhooks/present.js'
import { bearerSecurity, DEFAULT_LIMIT, idCursorParam, ErrorBody, errorResponses, IdParam, jsonBody, jsonResponse, newRouter, PageQuery } from './common.js'

// Endpoints work inside one application: scoped keys and portal tokens too (docs/applications.md).
const admin = requireAppRole(['admin'], 'write')
// Consumers (docs/pull-endpoints.md) may list and read endpoints too.
const viewer = requireAppRole(['viewer', 'consumer'], 'read')
const secretReader = requireAppRole(['admin'], 'read')
const base = { security: bearerSecurity, tags: ['endpoints'] }
const withErrors = { ...errorResponses, 422: jsonResponse(ErrorBody, 'destination_not_allowed') }
const Deleted = z.object({ deleted: z.literal(true), cancelled: z.number().int() }).openapi('EndpointDeleted')

const routes = {
  create: createRoute({
    ...base, method: 'post', path: '/v1/endpoints', operationId: 'createEndpoint', summary: 'Create an endpoint (admin)', middleware: [admin] as const,
    request: { body: jsonBody(EndpointCreate) },
    responses: { 201: jsonResponse(EndpointOut, 'created, with its secret'), ...withErrors },
  }),
  list: createRoute({
    ...base, method: 'get', path: '/v1/endpoints', operationId: 'listEndpoints', summary: 'List endpoints with health', middleware: [viewer] as const,
    request: { query: PageQuery.extend({ cursor: idCursorParam('ep'), app_id: AppId.optional().openapi({ param: { name: 'app_id', in: 'query' }, description: 'Only this application' }) }) },
    responses: { 200: jsonResponse(EndpointList, 'newest first'), ...errorResponses },
  }),
  get: createRoute({
    ...base, method: 'get', path: '/v1/endpoints/{id}', operationId: 'getEndpoint', summary: 'One endpoint with health', middleware: [viewer] as const,
    request: { params: IdParam },
    responses: { 200: jsonResponse(EndpointOut, 'the endpoint'), ...errorResponses },
  }),
  update: createRoute({
    ...base, method: 'patch', path: '/v1/endpoints/{id}', operationId: 'updateEndpoint', summary: 'Update an endpoint (admin)', middleware: [admin] as const,
    request: { params: IdParam, body: jsonBody(EndpointUpdate, false) },
    responses: { 200: jsonResponse(EndpointOut, 'updated'), ...withErrors },
  }),
  remove: createRoute({
    ...base, method: 'delete', path: '/v1/endpoints/{id}', operationId: 'deleteEndpoint', summary: 'Delete an endpoint, cancelling its pending deliveries (admin)',
    middleware: [admin] as const,
    request: { params: IdParam },
    responses: { 200: jsonResponse(Deleted, 'deleted'), ...errorResponses },
  }),
  secret: createRoute({
    ...base, method: 'get', path: '/v1/endpoints/{id}/secret', operationId: 'getEndpointSecret', summary: 'The signing secret (admin; any portal token, read-only ones too: a GET route)',
    middleware: [secretReader] as const,
    request: { params: IdParam },
    responses: { 200: jsonResponse(SecretOut, 'the current secret'), ...errorResponses },
  }),
  rotate: createRoute({
    ...base, method: 'post', path: '/v1/endpoints/{id}/secret/rotate', operationId: 'rotateEndpointSecret', summary: 'Rotate the signing secret (admin)',
    middleware: [admin] as const,
    request: { params: IdParam, body: jsonBody(RotateSecretIn, false) },
    responses: { 200: jsonResponse(SecretOut, 'the new secret'), ...errorResponses },
  }),
  enable: createRoute({
    ...base, method: 'post', path: '/v1/endpoints/{id}/enable', operationId: 'enableEndpoint', summary: 'Re-enable after a disable (admin)', middleware: [admin] as const,
    request: { params: IdParam },
    responses: { 200: jsonResponse(EndpointOut, 'enabled'), ...errorResponses },
  }),
  recover: createRoute({
    ...base, method: 'post', path: '/v1/endpoints/{id}/recover', operationId: 'recoverEndpoint', summary: 'Requeue dead deliveries created in [since, until) (admin)',
    middleware: [admin] as const,
    request: { params: IdParam, body: jsonBody(RecoverIn) },
    responses: { 202: jsonResponse(RecoverOut, 'queued'), 409: jsonResponse(ErrorBody, 'conflict: the endpoint is disabled'), ...errorResponses },
  }),
  test: createRoute({
    ...base, method: 'post', path: '/v1/endpoints/{id}/test', operationId: 'testEndpoint', summary: 'Send a postbox.ping event, or the example of a catalog type, to this endpoint only (admin)',
    middleware: [admin] as const,
    request: { params: IdParam, body: jsonBody(TestIn, false) },
    responses: { 202: jsonResponse(EventAccepted, 'queued'), 409: jsonResponse(ErrorBody, 'conflict: the endpoint is disabled'), ...errorResponses },
  }),
}

/** An endpoint as the caller may see it: custom header values are secrets, masked unless it may read secrets. */
const shown = <E extends { headers: Record<string, string> }>(c: Context<ApiEnv>, e: E): E =>
  mayReadSecrets(c) ? e : { ...e, headers: maskHeaders(e.headers) }

/** The /v1/endpoints family: thin handlers over the webhook service. */
export function endpointRoutes() {
  const r = newRouter()
  r.openapi(routes.create, async (c) => c.json(await c.var.deps.webhooks.endpoints.create(c.req.valid('json'), callerApp(c)), 201))
  r.openapi(routes.list, async (c) => {
    const q = c.req.valid('query')
    const page = await c.var.deps.webhooks.endpoints.list({ limit: q.limit ?? DEFAULT_LIMIT, cursor: q.cursor ?? null, ...(q.app_id !== undefined ? { app_id: q.app_id } : {}) }, callerApp(c))
    return c.json({ ...page, data: page.data.map((e) => shown(c, e)) }, 200)
  })
  const ep = (c: Context<ApiEnv>) => c.var.deps.webhooks.endpoints
  r.openapi(routes.get, async (c) => c.json(shown(c, await ep(c).get(c.req.valid('param').id, callerApp(c))), 200))
  r.openapi(routes.update, async (c) => c.json(await ep(c).update(c.req.valid('param').id, c.req.valid('json'), callerApp(c)), 200))
  r.openapi(routes.remove, async (c) => c.json(await ep(c).remove(c.req.valid('param').id, callerApp(c)), 200))
  r.openapi(routes.secret, async (c) => c.json(await ep(c).getSecret(c.req.valid('param').id, callerApp(c)), 200))
  r.openapi(routes.rotate, async (c) => c.json(await ep(c).rotateSecret(c.req.valid('param').id, c.req.valid('json'), callerApp(c)), 200))
  r.openapi(routes.enable, async (c) => c.json(await ep(c).enable(c.req.valid('param').id, callerApp(c)), 200))
  r.openapi(routes.recover, async (c) => c.json(await ep(c).recover(c.req.valid('param').id, c.req.valid('json'), callerApp(c)), 202))
  r.openapi(routes.test, async (c) => c.json(await ep(c).test(c.req.valid('param').id, c.req.valid('json') ?? {}, callerApp(c)), 202))
  return r
}
