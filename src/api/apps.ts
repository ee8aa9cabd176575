import { createRoute, z } from '@hono/zod-openapi'
import { AppCreate, AppList, AppOut, AppQuery, AppUpdate, PortalTokenIn, PortalTokenOut } from '../apps/schemas.js'
import { requireRole } from './auth.js'
import { bearerSecurity, ErrorBody, errorResponses, IdParam, jsonBody, jsonResponse, newRouter } from './common.js'

// Applications are the operator's: keys of every application only (scoped keys and portal tokens get 403).
const admin = requireRole('admin')
const viewer = requireRole('viewer')
const base = { security: bearerSecurity, tags: ['apps'] }
const Deleted = z.object({ deleted: z.literal(true), endpoints: z.number().int(), cancelled: z.number().int() }).openapi('AppDeleted')
const withConflict = { ...errorResponses, 409: jsonResponse(ErrorBody, 'conflict') }

const routes = {
  create: createRoute({
    ...base, method: 'post', path: '/v1/apps', operationId: 'createApp', summary: 'Create an application (admin)', middleware: [admin] as const,
    request: { body: jsonBody(AppCreate) },
    responses: { 201: jsonResponse(AppOut, 'created'), ...withConflict },
  }),
  list: createRoute({
    ...base, method: 'get', path: '/v1/apps', operationId: 'listApps', summary: 'List applications, newest first', middleware: [viewer] as const,
    request: { query: AppQuery },
    responses: { 200: jsonResponse(AppList, 'newest first'), ...errorResponses },
  }),
  get: createRoute({
    ...base, method: 'get', path: '/v1/apps/{id}', operationId: 'getApp', summary: 'An application with its counts of endpoints and deliveries', middleware: [viewer] as const,
    request: { params: IdParam },
    responses: { 200: jsonResponse(AppOut, 'the application'), ...errorResponses },
  }),
  update: createRoute({
    ...base, method: 'patch', path: '/v1/apps/{id}', operationId: 'updateApp', summary: 'Update an application (admin)', middleware: [admin] as const,
    request: { params: IdParam, body: jsonBody(AppUpdate, false) },
    responses: { 200: jsonResponse(AppOut, 'updated'), ...errorResponses },
  }),
  remove: createRoute({
    ...base, method: 'delete', path: '/v1/apps/{id}', operationId: 'deleteApp',
    summary: 'Delete an application, its endpoints and portal tokens, cancelling its pending deliveries (admin)', middleware: [admin] as const,
    request: { params: IdParam },
    responses: { 200: jsonResponse(Deleted, 'deleted'), ...withConflict },
  }),
  portalToken: createRoute({
    ...base, method: 'post', path: '/v1/apps/{id}/portal-tokens', operationId: 'createPortalToken',
    summary: 'Issue a portal token and link for one application (admin)', middleware: [admin] as const,
    request: { params: IdParam, body: jsonBody(PortalTokenIn, false) },
    responses: { 201: jsonResponse(PortalTokenOut, 'issued; the token is shown only here'), ...errorResponses },
  }),
}

/** The /v1/apps family: thin handlers over the applications service. */
export function appRoutes() {
  const r = newRouter()
  r.openapi(routes.create, async (c) => c.json(await c.var.deps.apps.create(c.req.valid('json')), 201))
  r.openapi(routes.list, async (c) => c.json(await c.var.deps.apps.list(c.req.valid('query')), 200))
  r.openapi(routes.get, async (c) => c.json(await c.var.deps.apps.get(c.req.valid('param').id), 200))
  r.openapi(routes.update, async (c) => c.json(await c.var.deps.apps.update(c.req.valid('param').id, c.req.valid('json') ?? {}), 200))
  r.openapi(routes.remove, async (c) => c.json(await c.var.deps.apps.remove(c.req.valid('param').id), 200))
  r.openapi(routes.portalToken, async (c) => c.json(await c.var.deps.apps.portalToken(c.req.valid('param').id, c.req.valid('json') ?? {}), 201))
  return r
}
