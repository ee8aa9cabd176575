import { createRoute, z } from '@hono/zod-openapi'
import { errors } from '../errors.js'
import { authenticate, requireRole } from './auth.js'
import { bearerSecurity, ErrorBody, errorResponses, jsonResponse, newRouter } from './common.js'

const Health = z.object({ status: z.literal('ok') }).openapi('Health')

const healthz = createRoute({
  method: 'get',
  path: '/healthz',
  operationId: 'getHealth',
  summary: 'Liveness: the process answers',
  // No credentials: an orchestrator probes it.
  security: [],
  responses: { 200: jsonResponse(Health, 'alive'), 405: jsonResponse(ErrorBody, 'method_not_allowed (only GET and HEAD)'), 500: jsonResponse(ErrorBody, 'internal') },
})

const readyz = createRoute({
  method: 'get',
  path: '/readyz',
  operationId: 'getReadiness',
  summary: 'Readiness: the database takes writes',
  security: [],
  responses: { 200: jsonResponse(Health, 'ready'), 405: jsonResponse(ErrorBody, 'method_not_allowed (only GET and HEAD)'), 503: jsonResponse(ErrorBody, 'unavailable') },
})

const metrics = createRoute({
  method: 'get',
  path: '/metrics',
  operationId: 'getMetrics',
  summary: 'Prometheus metrics (viewer key, or public with POSTBOX_METRICS_PUBLIC=true)',
  security: bearerSecurity,
  responses: {
    200: { content: { 'text/plain': { schema: z.string() } }, description: 'Prometheus text format' },
    401: errorResponses[401],
    403: errorResponses[403],
  },
})

/** /healthz, /readyz and /metrics. */
export function opsRoutes() {
  const router = newRouter()
  const auth = authenticate()
  const viewer = requireRole('viewer')
  router.openapi(healthz, (c) => c.json({ status: 'ok' as const }, 200))
  router.openapi(readyz, async (c) => {
    try {
      await c.var.deps.store.stats.probeWritable()
    } catch {
      throw errors.unavailable('Database is not writable')
    }
    return c.json({ status: 'ok' as const }, 200)
  })
  router.use('/metrics', async (c, next) => {
    if (c.var.deps.config.metricsPublic) return next()
    await auth(c, async () => {
      await viewer(c, next)
    })
  })
  router.openapi(metrics, async (c) => {
    const source = c.var.deps.metrics
    if (!source) return c.text('', 200)
    const text = await source.render()
    return c.text(text, 200, { 'content-type': source.contentType })
  })
  return router
}
