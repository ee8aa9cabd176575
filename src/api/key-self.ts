import { createRoute, z } from '@hono/zod-openapi'
import { errors } from '../errors.js'
import { keyJson } from './auth.js'
import { bearerSecurity, errorResponses, jsonResponse, newRouter } from './common.js'

const KeySelf = z
  .object({
    id: z.string(),
    name: z.string(),
    role: z.enum(['admin', 'publisher', 'viewer', 'consumer']),
    prefix: z.string(),
    created_at: z.string(),
    last_used_at: z.string().nullable(),
    app_id: z.string().nullable().openapi({ description: 'The one application a scoped key acts in; null for a key of every application' }),
  })
  .openapi('KeySelf')

const self = createRoute({
  method: 'get',
  path: '/v1/keys/self',
  operationId: 'getOwnKey',
  tags: ['keys'],
  summary: "The calling key itself: its role and application tell a client (the console) what it may do (any key; not a portal token)",
  security: bearerSecurity,
  responses: { 200: jsonResponse(KeySelf, 'the calling key'), ...errorResponses },
})

/** GET /v1/keys/self: any valid key may read its own id, name and role. */
export function keySelfRoutes() {
  const r = newRouter()
  r.openapi(self, async (c) => {
    const caller = c.get('apiKey')
    if (caller.portal) throw errors.forbidden('A portal token is not an API key')
    const row = await c.var.deps.store.keys.get(caller.id)
    if (!row) throw errors.invalidToken()
    const { id, name, role, prefix, created_at, last_used_at } = keyJson(row) as z.infer<typeof KeySelf>
    return c.json({ id, name, role, prefix, created_at, last_used_at, app_id: caller.appId }, 200)
  })
  return r
}
