import { createRoute, z } from '@hono/zod-openapi'
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
} from '../webhooks/schemas.js'
import { requireRole } from './auth.js'
import { bearerSecurity, DEFAULT_LIMIT, idCursorParam, ErrorBody, errorResponses, IdParam, jsonBody, jsonResponse, newRouter, PageQuery } from './common.js'

const admin = requireRole('admin')
const viewer = requireRole('viewer')
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
    request: { query: PageQuery.extend({ cursor: idCursorParam('ep') }) },
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
    ...base, method: 'get', path: '/v1/endpoints/{id}/secret', operationId: 'getEndpointSecret', summary: 'The signing secret (admin)', middleware: [admin] as const,
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
    ...base, method: 'post', path: '/v1/endpoints/{id}/test', operationId: 'testEndpoint', summary: 'Send a postbox.ping event to this endpoint only (admin)',
    middleware: [admin] as const,
    request: { params: IdParam },
    responses: { 202: jsonResponse(EventAccepted, 'queued'), 409: jsonResponse(ErrorBody, 'conflict: the endpoint is disabled'), ...errorResponses },
  }),
}

/** The /v1/endpoints family: thin handlers over the webhook service. */
export function endpointRoutes() {
  const r = newRouter()
  r.openapi(routes.create, (c) => c.json(c.var.deps.webhooks.endpoints.create(c.req.valid('json')), 201))
  r.openapi(routes.list, (c) => {
    const q = c.req.valid('query')
    return c.json(c.var.deps.webhooks.endpoints.list({ limit: q.limit ?? DEFAULT_LIMIT, cursor: q.cursor ?? null }), 200)
  })
  r.openapi(routes.get, (c) => c.json(c.var.deps.webhooks.endpoints.get(c.req.valid('param').id), 200))
  r.openapi(routes.update, (c) => c.json(c.var.deps.webhooks.endpoints.update(c.req.valid('param').id, c.req.valid('json')), 200))
  r.openapi(routes.remove, (c) => c.json(c.var.deps.webhooks.endpoints.remove(c.req.valid('param').id), 200))
  r.openapi(routes.secret, (c) => c.json(c.var.deps.webhooks.endpoints.getSecret(c.req.valid('param').id), 200))
  r.openapi(routes.rotate, (c) => c.json(c.var.deps.webhooks.endpoints.rotateSecret(c.req.valid('param').id, c.req.valid('json')), 200))
  r.openapi(routes.enable, (c) => c.json(c.var.deps.webhooks.endpoints.enable(c.req.valid('param').id), 200))
  r.openapi(routes.recover, (c) => c.json(c.var.deps.webhooks.endpoints.recover(c.req.valid('param').id, c.req.valid('json')), 202))
  r.openapi(routes.test, (c) => c.json(c.var.deps.webhooks.endpoints.test(c.req.valid('param').id), 202))
  return r
}
