import { createRoute, z } from '@hono/zod-openapi'
import { AppError, errors } from '../errors.js'
import { createApiKey, forgetCachedKeys, keyJson } from '../auth/keys.js'
import { AppId } from '../apps/schemas.js'
import { requireApp } from '../apps/service.js'
import { requireRole } from './auth.js'
import { bearerSecurity, DEFAULT_LIMIT, idCursorParam, errorResponses, IdParam, jsonBody, jsonResponse, newRouter, PageQuery } from './common.js'

const Role = z.enum(['admin', 'publisher', 'viewer', 'consumer'])

const KeyCreate = z
  .object({
    name: z.string().min(1).max(200).optional().openapi({ example: 'billing-service' }),
    role: Role,
    app_id: AppId.optional().openapi({ description: 'A scoped key: it acts only inside this application' }),
  })
  .openapi('KeyCreate')

const KeyOut = z
  .object({
    id: z.string(),
    name: z.string(),
    role: Role,
    app_id: z.string().nullable().openapi({ description: 'The application of a scoped key; null for a key of every application' }),
    prefix: z.string(),
    created_at: z.string(),
    last_used_at: z.string().nullable(),
    revoked: z.boolean(),
    revoked_at: z.string().nullable(),
  })
  .openapi('Key')

const KeyCreated = KeyOut.extend({ key: z.string().openapi({ description: 'The key itself; shown only once' }) }).openapi('KeyCreated')
const KeyList = z.object({ data: z.array(KeyOut), next_cursor: z.string().nullable() }).openapi('KeyList')
const Revoked = z.object({ revoked: z.literal(true) }).openapi('KeyRevoked')

const admin = requireRole('admin')

const create = createRoute({
  method: 'post',
  path: '/v1/keys',
  operationId: 'createKey',
  summary: 'Create an API key (admin)',
  security: bearerSecurity,
  middleware: [admin] as const,
  request: { body: jsonBody(KeyCreate) },
  responses: { 201: jsonResponse(KeyCreated, 'created; `key` is shown only here'), ...errorResponses },
})

const list = createRoute({
  method: 'get',
  path: '/v1/keys',
  operationId: 'listKeys',
  summary: 'List API keys (viewer; hashes and keys are never returned)',
  security: bearerSecurity,
  middleware: [requireRole('viewer')] as const,
  request: { query: PageQuery.extend({ cursor: idCursorParam('key') }) },
  responses: { 200: jsonResponse(KeyList, 'newest first'), ...errorResponses },
})

const revoke = createRoute({
  method: 'delete',
  path: '/v1/keys/{id}',
  operationId: 'revokeKey',
  summary: 'Revoke an API key (admin; not your own, not the last admin)',
  security: bearerSecurity,
  middleware: [admin] as const,
  request: { params: IdParam },
  responses: {
    200: jsonResponse(Revoked, 'revoked'),
    409: jsonResponse(errorResponses[400].content['application/json'].schema, 'last_admin'),
    ...errorResponses,
  },
})

/** POST/GET /v1/keys and DELETE /v1/keys/:id with the revoke rules of docs/api.md. */
export function keyRoutes() {
  const router = newRouter()
  router.openapi(create, async (c) => {
    const { store, clock } = c.var.deps
    const input = c.req.valid('json')
    const appId = input.app_id
    // The check and the insert in one transaction: no key is made for an application deleted meanwhile.
    const { row, key } = await store.tx(async (s) => {
      if (appId !== undefined) await requireApp(s, appId)
      return createApiKey(s, { name: input.name ?? input.role, role: input.role, appId: appId ?? null }, clock.now())
    })
    return c.json({ ...(keyJson(row) as z.infer<typeof KeyOut>), key }, 201)
  })
  router.openapi(list, async (c) => {
    const q = c.req.valid('query')
    const page = await c.var.deps.store.keys.list({ limit: q.limit ?? DEFAULT_LIMIT, cursor: q.cursor ?? null })
    return c.json({ data: page.data.map((r) => keyJson(r) as z.infer<typeof KeyOut>), next_cursor: page.next_cursor }, 200)
  })
  router.openapi(revoke, async (c) => {
    const { store, clock } = c.var.deps
    const { id } = c.req.valid('param')
    const caller = c.get('apiKey')
    // One transaction: two admins revoking each other at once cannot leave no admin.
    await store.tx(async (s) => {
      const target = await s.keys.get(id)
      if (!target) throw errors.notFound('Key')
      if (target.id === caller.id) throw new AppError('self_revoke_forbidden', 403, 'A key cannot revoke itself')
      if (target.revokedAt !== null) return
      if (target.role === 'admin' && target.appId === null && (await s.keys.countActiveAdmins()) <= 1) {
        throw new AppError('last_admin', 409, 'The last active admin key cannot be revoked')
      }
      await s.keys.revoke(id, clock.now())
    })
    forgetCachedKeys(store)
    return c.json({ revoked: true as const }, 200)
  })
  return router
}
