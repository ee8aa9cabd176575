import { createRoute, z } from '@hono/zod-openapi'
import { errors } from '../errors.js'
import { keyJson } from './auth.js'
import { bearerSecurity, errorResponses, jsonResponse, newRouter } from './common.js'

const KeySelf = z
  .object({
    id: z.string(),
    name: z.string(),
    role: z.enum(['admin', 'publisher', 'viewer']),
    prefix: z.string(),
    created_at: z.string(),
    last_used_at: z.string().nullable(),
  })
  .openapi('KeySelf')

const self = createRoute({
  method: 'get',
  path: '/v1/keys/self',
  operationId: 'getOwnKey',
  tags: ['keys'],
  summary: "The calling key itself: its role tells a client (the console) what it may do (any role)",
  security: bearerSecurity,
  responses: { 200: jsonResponse(KeySelf, 'the calling key'), ...errorResponses },
})

/** GET /v1/keys/self: any valid key may read its own id, name and role. */
export function keySelfRoutes() {
  const r = newRouter()
  r.openapi(self, (c) => {
    const caller = c.get('apiKey')
    const row = c.var.deps.store.keys.get(caller.id)
    if (!row) throw errors.invalidToken()
    const { id, name, role, prefix, created_at, last_used_at } = keyJson(row) as z.infer<typeof KeySelf>
    return c.json({ id, name, role, prefix, created_at, last_used_at }, 200)
  })
  return r
}
