import { createRoute, z } from '@hono/zod-openapi'
import { AppId, NotificationAccepted, NotificationIn, NotificationOut, NotificationSummary, Topic, UserId } from '../notify/schemas.js'
import { requireRole } from './auth.js'
import { bearerSecurity, ErrorBody, errorResponses, IdempotencyHeader, idempotencyKey, idCursorParam, IdParam, jsonBody, jsonResponse, newRouter, PageQuery } from './common.js'
import { notifyOf } from './directory.js'

const publisher = requireRole('publisher')
const viewer = requireRole('viewer')
const base = { security: bearerSecurity, tags: ['notifications'] }

const NotificationListQuery = PageQuery.extend({
  topic: Topic.optional().openapi({ param: { name: 'topic', in: 'query' } }),
  app_id: AppId.optional().openapi({ param: { name: 'app_id', in: 'query' } }),
  user_id: UserId.optional().openapi({ param: { name: 'user_id', in: 'query' }, description: 'Notifications with a delivery to, or a suppression of, this recipient' }),
  since: z.iso.datetime({ offset: true }).optional().openapi({ param: { name: 'since', in: 'query' }, description: 'Created at or after (ISO 8601)' }),
  until: z.iso.datetime({ offset: true }).optional().openapi({ param: { name: 'until', in: 'query' }, description: 'Created before (ISO 8601)' }),
  cursor: idCursorParam('ntf'),
})
const NotificationList = z.object({ data: z.array(NotificationSummary), next_cursor: z.string().nullable() }).openapi('NotificationList')

const routes = {
  list: createRoute({
    ...base, method: 'get', path: '/v1/notifications', operationId: 'listNotifications', summary: 'Notifications, newest first, by topic, app, recipient and time',
    middleware: [viewer] as const,
    request: { query: NotificationListQuery },
    responses: { 200: jsonResponse(NotificationList, 'a page'), ...errorResponses },
  }),
  send: createRoute({
    ...base, method: 'post', path: '/v1/notifications', operationId: 'sendNotification', summary: 'Send a notification (publisher)', middleware: [publisher] as const,
    request: { headers: IdempotencyHeader('The `dedup_key`, when the body has none'), body: jsonBody(NotificationIn) },
    responses: {
      202: jsonResponse(NotificationAccepted, 'accepted and committed; also a repeat of an accepted dedup_key (or Idempotency-Key), answered with the original and deduplicated: true (docs/notifications-basics.md)'),
      409: jsonResponse(ErrorBody, 'conflict: the dedup_key is already used by another application'),
      ...errorResponses,
    },
  }),
  get: createRoute({
    ...base, method: 'get', path: '/v1/notifications/{id}', operationId: 'getNotification', summary: 'A notification with per-recipient, per-channel delivery states',
    middleware: [viewer] as const,
    request: { params: IdParam },
    responses: { 200: jsonResponse(NotificationOut, 'the notification'), ...errorResponses },
  }),
}

/** POST /v1/notifications, the operator's list and GET /v1/notifications/:id with receipts (docs/notifications.md). */
export function notificationRoutes() {
  const r = newRouter()
  r.openapi(routes.send, async (c) => {
    const body = c.req.valid('json')
    // As POST /v1/events, the header is the dedup key when the body has none; unlike events, a
    // repeat answers 202 too (docs/notifications-basics.md: the route returns 202 {id, deduplicated, …}).
    const key = idempotencyKey(c.req.valid('header')['idempotency-key'], body.dedup_key, 'dedup_key')
    const result = await notifyOf(c).notifications.send(key !== body.dedup_key ? { ...body, dedup_key: key } : body)
    return c.json(result, 202)
  })
  r.openapi(routes.list, async (c) => c.json(await notifyOf(c).notifications.list(c.req.valid('query')), 200))
  r.openapi(routes.get, async (c) => c.json(await notifyOf(c).notifications.get(c.req.valid('param').id), 200))
  return r
}
