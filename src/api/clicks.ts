import { createRoute, z } from '@hono/zod-openapi'
import { errors } from '../errors.js'
import { ErrorBody, errorResponses, jsonResponse, newRouter } from './common.js'
import { notifyOf } from './directory.js'

const SignedParam = z.object({
  signed: z.string().min(1).max(2048).openapi({ param: { name: 'signed', in: 'path' }, description: 'The signed part of a tracked email link' }),
})

const follow = createRoute({
  method: 'get', path: '/c/{signed}', tags: ['notifications'], operationId: 'followClickLink', security: [],
  // A link in an email, answered with a redirect: left out of /openapi.json (it has no 2xx).
  hide: true,
  summary: 'A tracked email link: records the click and redirects to the notification’s action_url',
  request: { params: SignedParam },
  responses: {
    302: { description: 'to the recorded http(s) action_url', headers: z.object({ location: z.string() }) },
    404: errorResponses[404],
    // Any other answer is an error in the one format (a redirect is the only success).
    default: jsonResponse(ErrorBody, 'an error: the one error format'),
  },
})

/** GET /c/:signed, the tracked links of POSTBOX_TRACK_CLICKS (no key: the signature is the credential). */
export function clickRoutes() {
  const r = newRouter()
  r.openapi(follow, async (c) => {
    const url = await notifyOf(c).clicks.follow(c.req.valid('param').signed)
    if (url === null) throw errors.notFound('Link')
    c.header('cache-control', 'no-store')
    c.header('referrer-policy', 'no-referrer')
    return c.redirect(url, 302)
  })
  return r
}
