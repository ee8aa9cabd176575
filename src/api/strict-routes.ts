import type { OpenAPIHono } from '@hono/zod-openapi'
import type { MiddlewareHandler } from 'hono'
import { matchedRoutes } from 'hono/route'
import { errors } from '../errors.js'
import type { ApiEnv } from './deps.js'
import { isRoleGuard } from './auth.js'

/** A route as the router knows it: method and Hono path (`/v1/endpoints/:id`). */
interface RouteKey {
  method: string
  path: string
}

/** The query keys a zod schema declares; null when it is not an object schema (then any key passes). */
function declaredKeys(schema: unknown): string[] | null {
  const shape = (schema as { shape?: unknown } | undefined)?.shape
  return typeof shape === 'object' && shape !== null ? Object.keys(shape) : null
}

/** `/v1/endpoints/{id}` (OpenAPI) as Hono writes it: `/v1/endpoints/:id`. */
const honoPath = (openapiPath: string): string => openapiPath.replace(/\{([^}]+)\}/g, ':$1')

/**
 * The query parameters of every route declared with createRoute, from the app's OpenAPI
 * registry (routers mounted with `app.route()` add theirs to it): `METHOD path` → keys. A route
 * without `request.query` declares none. Read once, on the first request.
 */
function declaredQueries(app: OpenAPIHono<ApiEnv>): Map<string, string[] | null> {
  const out = new Map<string, string[] | null>()
  for (const d of app.openAPIRegistry.definitions) {
    if (d.type !== 'route') continue
    const query = (d.route.request as { query?: unknown } | undefined)?.query
    out.set(`${d.route.method.toUpperCase()} ${honoPath(d.route.path)}`, query === undefined ? [] : declaredKeys(query))
  }
  return out
}

/**
 * Refuses query parameters the matched route does not declare (a misspelt `?staus=` would
 * otherwise list everything), with 400 `validation_failed` naming each. Generic: it reads the
 * route's `request.query` schema, so every route declared with createRoute is covered. Routes
 * outside the registry (`/openapi.json`) take no parameters either. On a route with a role guard
 * the 400 is left to the guard (`strayQuery`), which throws it after the role check: a caller the
 * route refuses learns 403, never whether its query would have been valid (issue #36, finding 6).
 */
export function strictQuery(app: OpenAPIHono<ApiEnv>): MiddlewareHandler<ApiEnv> {
  let declared: Map<string, string[] | null> | null = null
  return async (c, next) => {
    const names = Object.keys(c.req.queries())
    if (names.length > 0) {
      const matched = matchedRoutes(c)
      const route = matched.findLast((r) => r.method !== 'ALL')
      if (route) {
        declared ??= declaredQueries(app)
        const keys = declared.has(`${route.method} ${route.path}`) ? declared.get(`${route.method} ${route.path}`)! : []
        // A role guard among the route's handlers (createRoute's `middleware`) throws it after its check.
        const guarded = matched.some((r) => isRoleGuard(r.handler))
        if (keys !== null) {
          const unknown = names.filter((n) => !keys.includes(n))
          if (unknown.length > 0) {
            const known = keys.length ? `this route takes ${keys.join(', ')}` : 'this route takes no query parameters'
            const err = errors.validation(unknown.map((field) => ({ field, message: `is not a query parameter of this route (${known})`, in: 'query' })))
            if (!guarded) throw err
            c.set('strayQuery', err)
          }
        }
      }
    }
    await next()
  }
}

/**
 * Refuses a NUL character (U+0000, `%00`) in the path or in a query value with 400
 * `validation_failed`: no id, filter or cursor holds one, and PostgreSQL cannot compare text
 * with it (docs/api.md, "Errors").
 */
export function refuseNul(): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    if (c.req.path.includes('\0') || /%00/.test(c.req.path)) {
      throw errors.validation([{ field: '(path)', message: 'contains a NUL character (%00)', in: 'path' }])
    }
    const url = c.req.url
    const q = url.indexOf('?')
    if (q >= 0 && (/%00/.test(url.slice(q)) || url.includes('\0', q))) {
      const bad = Object.entries(c.req.queries()).filter(([k, vs]) => k.includes('\0') || vs.some((v) => v.includes('\0')))
      throw errors.validation((bad.length ? bad.map(([k]) => k) : ['(query)']).map((field) => ({ field, message: 'contains a NUL character (%00)', in: 'query' })))
    }
    await next()
  }
}

/** A Hono route path as a regular expression over request paths (exact: the router is strict about a trailing slash). */
function pathPattern(path: string): RegExp {
  const body = path
    .split(/(:[A-Za-z0-9_]+|\*)/)
    .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? '[^/]+' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')))
    .join('')
  return new RegExp(`^${body}$`)
}

/**
 * The methods the app serves at `path` (HEAD with GET), or none when no route has that path:
 * what a 405's `Allow` header lists, for the notFound handler.
 */
export function allowedMethods(app: { routes: readonly RouteKey[] }, path: string): string[] {
  const methods = new Set<string>()
  for (const r of app.routes) {
    if (r.method === 'ALL' || r.path.endsWith('*')) continue
    if (pathPattern(r.path).test(path)) methods.add(r.method)
  }
  if (methods.has('GET')) methods.add('HEAD')
  return [...methods].sort()
}
