import { createRoute } from '@hono/zod-openapi'
import type { Context } from 'hono'
import type { ApiEnv } from './deps.js'
import { AckIn, ClaimIn, ClaimOut, NackIn, ReleaseIn, SettleOut } from '../webhooks/pull-schemas.js'
import { callerApp, requireAppRole } from './auth.js'
import { bearerSecurity, ErrorBody, errorResponses, IdParam, jsonBody, jsonResponse, newRouter } from './common.js'

// Consumer keys (of every application, or scoped to one) and admin keys; no portal token (docs/pull-endpoints.md).
const consumer = requireAppRole(['consumer'])
const base = { security: bearerSecurity, tags: ['pull endpoints'] }
const withConflict = { ...errorResponses, 409: jsonResponse(ErrorBody, 'conflict: a push endpoint') }

const routes = {
  claim: createRoute({
    ...base, method: 'post', path: '/v1/endpoints/{id}/claim', operationId: 'claimDeliveries', middleware: [consumer] as const,
    summary: 'Claim due deliveries of a pull endpoint, oldest first (consumer, admin)',
    request: { params: IdParam, body: jsonBody(ClaimIn, false) },
    responses: { 200: jsonResponse(ClaimOut, 'the claimed deliveries (none when nothing was due within wait)'), ...withConflict },
  }),
  ack: createRoute({
    ...base, method: 'post', path: '/v1/endpoints/{id}/ack', operationId: 'ackDeliveries', middleware: [consumer] as const, summary: 'Acknowledge claimed deliveries (consumer, admin)',
    request: { params: IdParam, body: jsonBody(AckIn) },
    responses: { 200: jsonResponse(SettleOut, 'one result per item, in input order'), ...withConflict },
  }),
  nack: createRoute({
    ...base, method: 'post', path: '/v1/endpoints/{id}/nack', operationId: 'nackDeliveries', middleware: [consumer] as const, summary: 'Fail claimed deliveries: retry, dead or snooze (consumer, admin)',
    request: { params: IdParam, body: jsonBody(NackIn) },
    responses: { 200: jsonResponse(SettleOut, 'one result per item, in input order'), ...withConflict },
  }),
  release: createRoute({
    ...base, method: 'post', path: '/v1/endpoints/{id}/release', operationId: 'releaseDeliveries', middleware: [consumer] as const, summary: 'Give claimed, unprocessed deliveries back; the attempt is refunded (consumer, admin)',
    request: { params: IdParam, body: jsonBody(ReleaseIn) },
    responses: { 200: jsonResponse(SettleOut, 'one result per item, in input order'), ...withConflict },
  }),
}

/** The pull-endpoint routes: claim, ack, nack and release, thin handlers over the pull service. */
export function pullRoutes() {
  const r = newRouter()
  const pull = (c: Context<ApiEnv>) => c.var.deps.webhooks.pull
  r.openapi(routes.claim, async (c) => c.json(await pull(c).claim(c.req.valid('param').id, c.req.valid('json') ?? {}, callerApp(c), c.req.raw.signal), 200))
  r.openapi(routes.ack, async (c) => c.json(await pull(c).ack(c.req.valid('param').id, c.req.valid('json'), callerApp(c)), 200))
  r.openapi(routes.nack, async (c) => c.json(await pull(c).nack(c.req.valid('param').id, c.req.valid('json'), callerApp(c)), 200))
  r.openapi(routes.release, async (c) => c.json(await pull(c).release(c.req.valid('param').id, c.req.valid('json'), callerApp(c)), 200))
  return r
}
