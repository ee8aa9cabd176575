import { OpenAPIHono } from '@hono/zod-openapi'
import type { Context, MiddlewareHandler } from 'hono'
import { cors } from 'hono/cors'
import { HTTPException } from 'hono/http-exception'
import { matchedRoutes } from 'hono/route'
import { ZodError } from 'zod'
import { packageVersion } from '../delivery/version.js'
import { AppError, errors, isStorageUnavailable, isUnstorableText, type ErrorStatus } from '../errors.js'
import { authenticate } from './auth.js'
import { jsonBodyGuard } from './body.js'
import { validationHook, zodDetails } from './common.js'
import type { ApiDeps, ApiEnv } from './deps.js'
import { deliveryRoutes } from './deliveries.js'
import { requestRoutes } from './requests.js'
import { endpointRoutes } from './endpoints.js'
import { pullRoutes } from './pull.js'
import { eventRoutes } from './events.js'
import { keyRoutes } from './keys.js'
import { opsRoutes } from './ops.js'
import { notificationRoutes } from './notifications.js'
import { directoryRoutes } from './directory.js'
import { inboxRoutes, userToken } from './inbox.js'
import { allowedMethods, refuseNul, strictQuery } from './strict-routes.js'
import { keySelfRoutes } from './key-self.js'
import { statsRoutes } from './stats.js'
import { templatePreviewRoutes } from './template-preview.js'
import { apiDocsRoutes } from './api-docs.js'
import { webRoutes } from './web.js'
import { appRoutes } from './apps.js'
import { eventTypeRoutes } from './event-types.js'
import { createAppService } from '../apps/service.js'
import { randomBytes } from 'node:crypto'
import { sdkAssetRoutes } from './sdk-assets.js'
import { clickRoutes } from './clicks.js'

/** The API's major version, in every path (`/v1`); the document's `info.version` is the package's. */
export const API_VERSION = 'v1'

/** Paths that authenticate themselves (end-user tokens), not with an API key. */
const SELF_AUTH = /^\/v1\/inbox(\/|$)/

/** Every request header the API reads, so a browser may send them cross-origin. */
const CORS_ALLOW_HEADERS = ['authorization', 'content-type', 'last-event-id', 'idempotency-key']
/** Methods of the /v1 routes (GET and POST are allowed anyway; listed for clarity). */
const CORS_ALLOW_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']
/** Seconds a browser may cache a preflight answer: one preflight per route per 10 minutes. */
const CORS_MAX_AGE = 600

/**
 * CORS for the browser front end of POSTBOX_CORS_ORIGINS, or the inbox element's pages
 * (POSTBOX_INBOX_ORIGINS) on the user-token routes (hono/cors). Credentials are bearer
 * tokens, never cookies, so no Allow-Credentials. A preflight from an origin not on the list
 * is not answered as one: it goes on as if CORS were off (auth, then 404), with no CORS headers.
 */
export function corsMiddleware(origins: readonly string[]): MiddlewareHandler<ApiEnv> {
  const any = origins.includes('*')
  const handler = cors({ origin: any ? '*' : [...origins], allowMethods: CORS_ALLOW_METHODS, allowHeaders: CORS_ALLOW_HEADERS, maxAge: CORS_MAX_AGE })
  return async (c, next) => {
    if (c.req.method === 'OPTIONS' && !any && !origins.includes(c.req.header('origin') ?? '')) return next()
    return handler(c, next)
  }
}

/**
 * `Idempotency-Key` on POST /v1/events/batch is 400 `validation_failed`: a client retrying a
 * batch with it would expect deduplication, which each event's own `id` gives. Other POSTs
 * ignore it, as before: SDKs and fetch wrappers add it to every POST, and those routes either
 * repeat harmlessly (inbox state, tests, enable) or are operator actions. Unknown routes stay 404.
 */
export function idempotencyKeyGuard(): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    if (c.req.method === 'POST' && c.req.header('idempotency-key') !== undefined) {
      const route = matchedRoutes(c).at(-1)
      if (route?.method === 'POST' && route.path === '/v1/events/batch') {
        throw errors.validation([{ field: 'idempotency-key', message: 'is not supported on POST /v1/events/batch: give each event its own `id` instead', in: 'header' }])
      }
    }
    await next()
  }
}

/**
 * Builds the HTTP API: one body guard (limit before parsing, JSON only), API-key auth on /v1,
 * the resource routers, /openapi.json from the same zod schemas, and ONE error handler that
 * renders every failure as `{"error": {code, message, details}}`.
 */
export function createApp(given: ApiDeps): OpenAPIHono<ApiEnv> {
  // Without a token key of its own (a test app), portal tokens are signed with a key of this app only.
  const deps = { ...given, apps: given.apps ?? createAppService({ store: given.store, config: given.config, clock: given.clock, portalKey: randomBytes(32) }) }
  const app = new OpenAPIHono<ApiEnv>({ defaultHook: validationHook })
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer', description: 'pbk_ API key, or a ptk_ portal token on the portal routes' })

  app.use('*', async (c, next) => {
    c.set('deps', deps)
    await next()
  })
  // Before auth: a preflight carries no Authorization header, and a 401 must be readable too.
  // The user-token routes serve the inbox element on the operator's own site: any origin unless
  // POSTBOX_INBOX_ORIGINS narrows it (bearer tokens, never cookies, so a foreign page gains nothing).
  const inboxCors = corsMiddleware(deps.config.inboxOrigins?.length ? deps.config.inboxOrigins : ['*'])
  const apiCors = deps.config.corsOrigins?.length ? corsMiddleware(deps.config.corsOrigins) : null
  app.use('/v1/*', async (c, next) => (SELF_AUTH.test(c.req.path) ? inboxCors(c, next) : apiCors ? apiCors(c, next) : next()))
  const auth = authenticate()
  // The inbox authenticates with user tokens, also before the body guard.
  app.use('/v1/*', async (c, next) => (SELF_AUTH.test(c.req.path) ? (deps.notify ? userToken(c, next) : next()) : auth(c, next)))
  app.use('*', refuseNul())
  app.use('*', strictQuery(app))
  app.use('*', idempotencyKeyGuard())
  app.use('*', jsonBodyGuard(deps.config.maxBody))

  app.route('/', opsRoutes())
  app.route('/', webRoutes(deps.webDir))
  app.route('/', keySelfRoutes())
  app.route('/', sdkAssetRoutes(deps.sdkDir))
  app.route('/', keyRoutes())
  app.route('/', statsRoutes())
  app.route('/', endpointRoutes())
  app.route('/', pullRoutes())
  app.route('/', eventRoutes(deps))
  app.route('/', deliveryRoutes())
  app.route('/', appRoutes())
  app.route('/', eventTypeRoutes())
  app.route('/', requestRoutes())
  if (deps.notify) app.route('/', notificationRoutes())
  if (deps.notify) app.route('/', directoryRoutes())
  if (deps.notify) app.route('/', templatePreviewRoutes())
  if (deps.notify) app.route('/', inboxRoutes())
  if (deps.notify) app.route('/', clickRoutes())

  // Generated once, on first request, from the same zod schemas that validate requests.
  let openapi: unknown = null
  const document = (): unknown =>
    (openapi ??= app.getOpenAPI31Document({
      openapi: '3.1.0',
      info: {
        title: 'Postbox API',
        version: packageVersion(),
        description: 'Durable webhooks and notifications (docs/api.md).',
        license: { name: 'MIT', url: 'https://opensource.org/license/mit' },
      },
      // Relative: the server that serves this document.
      servers: [{ url: '/', description: 'this Postbox' }],
    }))
  app.get('/openapi.json', (c) => c.json(document() as object))
  app.route('/', apiDocsRoutes(document))

  // A path served with other methods is 405 with Allow, not 404.
  app.notFound((c) => {
    const allow = allowedMethods(app, c.req.path)
    throw allow.length > 0 ? errors.methodNotAllowed(allow) : errors.notFound('Route')
  })
  app.onError((err, c) => renderError(err, c, deps))
  return app
}

/** Maps any thrown value to the one error format; unknown errors are logged and hidden. */
export function renderError(err: unknown, c: Context, deps: Pick<ApiDeps, 'log'>): Response {
  const e = toAppError(err)
  if (e.status === 500) deps.log.error({ err, method: c.req.method, path: c.req.path }, 'unhandled error')
  else if (e.status === 503) deps.log.warn({ err: String(err), path: c.req.path }, 'storage unavailable')
  const body: { error: { code: string; message: string; details?: unknown } } = { error: { code: e.code, message: e.message } }
  if (e.details !== undefined) body.error.details = FIELD_ISSUE_CODES.has(e.code) ? normalizeIssues(e.details) : e.details
  return c.json(body, e.status, e.headers ? { ...e.headers } : undefined)
}

function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err
  if (err instanceof ZodError) return errors.validation(zodDetails(err))
  if (isStorageUnavailable(err)) return errors.unavailable()
  if (isUnstorableText(err)) return errors.validation([{ field: '(text)', message: 'a text field contains a NUL character (U+0000), which PostgreSQL cannot store', in: 'body' }])
  if (err instanceof HTTPException) {
    const status = err.status as number
    if (status === 400) return errors.invalidJson()
    if (status === 404) return errors.notFound('Route')
    if (status === 413) return errors.payloadTooLarge(0)
    if (status === 415) return errors.unsupportedMediaType()
    if (status === 401) return errors.unauthorized()
    if (status === 403) return errors.forbidden()
    if (status >= 400 && status < 500) return new AppError('bad_request', status as ErrorStatus, err.message || 'Bad request')
  }
  return new AppError('internal', 500, 'Internal error')
}

/**
 * The `errorHandler` option of @hono/node-server's request listener. Requests it cannot turn
 * into a URL before any route runs (`GET *`, `OPTIONS *`, a Host header with a space, a
 * backslash in the path: its RequestError) get the error JSON, 400 `bad_request`, with the
 * connection closed as for the parser's refusals, instead of the adapter's empty text/plain 400.
 * `serve()` does not pass this option on: build the listener with `getRequestListener(fetch,
 * { hostname, errorHandler: adapterErrorResponse })`.
 */
export function adapterErrorResponse(err: unknown): Response {
  const bad = err instanceof Error && err.name === 'RequestError'
  const [status, code, message] = bad
    ? [400, 'bad_request', 'Malformed HTTP request: the request target and Host header do not form a URL']
    : [500, 'internal', 'Internal error']
  return new Response(JSON.stringify({ error: { code, message } }), { status, headers: { 'content-type': 'application/json', connection: 'close' } })
}

/** Error codes whose `details` list field issues (a refused URL names its field too). */
const FIELD_ISSUE_CODES = new Set(['validation_failed', 'destination_not_allowed'])

/** Services report field issues as `{path, message}`; the API always answers `{field, message, in?}`. */
function normalizeIssues(details: unknown): unknown {
  if (!Array.isArray(details)) return details
  return details.map((d: unknown) => {
    if (typeof d !== 'object' || d === null) return d
    // Services only ever validate request bodies (queries and params are checked by the routes).
    const { path, field, in: where, ...rest } = d as { path?: unknown; field?: unknown; in?: unknown }
    return { field: typeof field === 'string' ? field : typeof path === 'string' && path !== '' ? path : '(root)', ...rest, in: where ?? 'body' }
  })
}
