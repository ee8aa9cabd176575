import { createRoute, z } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { errors } from '../errors.js'
import type { NotifyService } from '../notify/service.js'
import {
  PreferenceIn,
  PreferenceOut,
  SubscriptionIn,
  SubscriptionOut,
  TemplateIn,
  TemplateOut,
  TokenIn,
  TokenOut,
  Topic,
  UserId,
  UserIn,
  UserOut,
} from '../notify/schemas.js'
import { requireRole } from './auth.js'
import { bearerSecurity, errorResponses, jsonBody, jsonResponse, newRouter, PageQuery } from './common.js'
import type { ApiEnv } from './deps.js'

const admin = requireRole('admin')
const viewer = requireRole('viewer')
const base = { security: bearerSecurity, tags: ['directory'] }
const Deleted = z.object({ deleted: z.literal(true) }).openapi('Deleted')
const listOf = <T extends z.ZodType>(item: T, name: string) =>
  z.object({ data: z.array(item), next_cursor: z.string().nullable() }).openapi(name)
/** `:id` of the /v1/users routes: the one user-id rule, also in /openapi.json. */
const UserIdParam = z.object({ id: UserId.openapi({ param: { name: 'id', in: 'path' } }) })
/** `:id` of GET /v1/users/:id/preferences: a user id, or "*" for the rows that apply to everyone. */
const PreferencesOwnerParam = z.object({
  id: z.union([z.literal('*'), UserId]).openapi({ param: { name: 'id', in: 'path' }, description: 'a user id, or * for the rows of every user' }),
})
const Group = z.string().min(1).max(200)
const UsersQuery = PageQuery.extend({
  role: Group.optional().openapi({ param: { name: 'role', in: 'query' } }),
  team: Group.optional().openapi({ param: { name: 'team', in: 'query' } }),
  q: z.string().min(1).max(200).optional().openapi({ param: { name: 'q', in: 'query' }, description: 'A case-insensitive substring of the id, email or name' }),
})
const TopicQuery = PageQuery.extend({ topic: Topic.optional().openapi({ param: { name: 'topic', in: 'query' } }) })

/** The notify service of the app; 503 when the app was built without one. */
export function notifyOf(c: Context<ApiEnv>): NotifyService {
  const notify = c.var.deps.notify as NotifyService | undefined
  if (!notify) throw errors.unavailable('Notifications are not configured')
  return notify
}

const routes = {
  putUser: createRoute({
    ...base, method: 'put', path: '/v1/users/{id}', operationId: 'putUser', summary: 'Create or update a user (admin)', middleware: [admin] as const,
    request: { params: UserIdParam, body: jsonBody(UserIn) },
    responses: { 200: jsonResponse(UserOut, 'updated'), 201: jsonResponse(UserOut, 'created'), ...errorResponses },
  }),
  listUsers: createRoute({
    ...base, method: 'get', path: '/v1/users', operationId: 'listUsers', summary: 'List users, newest first, by role, team or a substring', middleware: [viewer] as const,
    request: { query: UsersQuery },
    responses: { 200: jsonResponse(listOf(UserOut, 'UserList'), 'users'), ...errorResponses },
  }),
  getUser: createRoute({
    ...base, method: 'get', path: '/v1/users/{id}', operationId: 'getUser', summary: 'A user', middleware: [viewer] as const,
    request: { params: UserIdParam },
    responses: { 200: jsonResponse(UserOut, 'the user'), ...errorResponses },
  }),
  deleteUser: createRoute({
    ...base, method: 'delete', path: '/v1/users/{id}', operationId: 'deleteUser', summary: 'Delete a user with their subscriptions and preferences (admin)',
    middleware: [admin] as const,
    request: { params: UserIdParam },
    responses: { 200: jsonResponse(Deleted, 'deleted'), ...errorResponses },
  }),
  issueToken: createRoute({
    ...base, method: 'post', path: '/v1/users/{id}/tokens', operationId: 'issueUserToken', summary: 'Issue an end-user inbox token (admin)', middleware: [admin] as const,
    request: { params: UserIdParam, body: jsonBody(TokenIn, false) },
    responses: { 201: jsonResponse(TokenOut, 'the token, signed by the server'), ...errorResponses },
  }),
  userPreferences: createRoute({
    ...base, method: 'get', path: '/v1/users/{id}/preferences', operationId: 'listUserPreferences', summary: "A user's preferences", middleware: [viewer] as const,
    request: { params: PreferencesOwnerParam, query: PageQuery },
    responses: { 200: jsonResponse(listOf(PreferenceOut, 'PreferenceList'), 'the rows of that user'), ...errorResponses },
  }),
  putSubscription: createRoute({
    ...base, method: 'put', path: '/v1/subscriptions', operationId: 'putSubscription', summary: 'Subscribe a principal to a topic (admin)', middleware: [admin] as const,
    request: { body: jsonBody(SubscriptionIn) },
    responses: { 200: jsonResponse(SubscriptionOut, 'subscribed'), ...errorResponses },
  }),
  deleteSubscription: createRoute({
    ...base, method: 'delete', path: '/v1/subscriptions', operationId: 'deleteSubscription', summary: 'Unsubscribe a principal from a topic (admin)', middleware: [admin] as const,
    request: { body: jsonBody(SubscriptionIn) },
    responses: { 200: jsonResponse(Deleted, 'deleted'), ...errorResponses },
  }),
  listSubscriptions: createRoute({
    ...base, method: 'get', path: '/v1/subscriptions', operationId: 'listSubscriptions', summary: 'List subscriptions, optionally of one topic', middleware: [viewer] as const,
    request: { query: TopicQuery },
    responses: { 200: jsonResponse(listOf(SubscriptionOut, 'SubscriptionList'), 'subscriptions'), ...errorResponses },
  }),
  putPreference: createRoute({
    ...base, method: 'put', path: '/v1/preferences', operationId: 'putPreference', summary: 'Set a preference row (admin)', middleware: [admin] as const,
    request: { body: jsonBody(PreferenceIn) },
    responses: { 200: jsonResponse(PreferenceOut, 'stored'), ...errorResponses },
  }),
  putTemplate: createRoute({
    ...base, method: 'put', path: '/v1/templates', operationId: 'putTemplate', summary: 'Add a template version (admin)', middleware: [admin] as const,
    request: { body: jsonBody(TemplateIn) },
    responses: { 201: jsonResponse(TemplateOut, 'the new version'), ...errorResponses },
  }),
  listTemplates: createRoute({
    ...base, method: 'get', path: '/v1/templates', operationId: 'listTemplates', summary: 'List templates, every version', middleware: [viewer] as const,
    request: { query: TopicQuery },
    responses: { 200: jsonResponse(listOf(TemplateOut, 'TemplateList'), 'templates'), ...errorResponses },
  }),
}

/** Users, tokens, subscriptions, preferences and templates (docs/notifications-basics.md). */
export function directoryRoutes() {
  const r = newRouter()
  r.openapi(routes.putUser, async (c) => {
    const { user, created } = await notifyOf(c).users.put(c.req.valid('param').id, c.req.valid('json'))
    return c.json(user, created ? 201 : 200)
  })
  r.openapi(routes.listUsers, async (c) => {
    const { role, team, q, ...page } = c.req.valid('query')
    return c.json(await notifyOf(c).users.list({ ...(role ? { role } : {}), ...(team ? { team } : {}), ...(q ? { q } : {}) }, page), 200)
  })
  r.openapi(routes.getUser, async (c) => c.json(await notifyOf(c).users.get(c.req.valid('param').id), 200))
  r.openapi(routes.deleteUser, async (c) => {
    await notifyOf(c).users.delete(c.req.valid('param').id)
    return c.json({ deleted: true as const }, 200)
  })
  r.openapi(routes.issueToken, async (c) => {
    const body = c.req.valid('json') ?? {}
    return c.json(await notifyOf(c).tokens.issue(c.req.valid('param').id, body.ttl_seconds, body.app_id), 201)
  })
  r.openapi(routes.userPreferences, async (c) => {
    return c.json(await notifyOf(c).preferences.list(c.req.valid('param').id, c.req.valid('query')), 200)
  })
  r.openapi(routes.putSubscription, async (c) => c.json(await notifyOf(c).subscriptions.put(c.req.valid('json')), 200))
  r.openapi(routes.deleteSubscription, async (c) => {
    await notifyOf(c).subscriptions.delete(c.req.valid('json'))
    return c.json({ deleted: true as const }, 200)
  })
  r.openapi(routes.listSubscriptions, async (c) => {
    const { topic, ...page } = c.req.valid('query')
    return c.json(await notifyOf(c).subscriptions.list(topic, page), 200)
  })
  r.openapi(routes.putPreference, async (c) => c.json(await notifyOf(c).preferences.put(c.req.valid('json')), 200))
  r.openapi(routes.putTemplate, async (c) => c.json(await notifyOf(c).templates.put(c.req.valid('json')), 201))
  r.openapi(routes.listTemplates, async (c) => {
    const { topic, ...page } = c.req.valid('query')
    return c.json(await notifyOf(c).templates.list(topic, page), 200)
  })
  return r
}
