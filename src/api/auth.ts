import type { Context, MiddlewareHandler } from 'hono'
import { errors } from '../errors.js'
import type { KeyRole } from '../store/keys.js'
import { verifyKey } from '../auth/keys.js'
import { PORTAL_TOKEN_PREFIX } from '../auth/portal-tokens.js'
import type { ApiEnv } from './deps.js'

// The key domain lives in src/auth/keys.ts; these names stay importable from here for code written before the move.
export { createApiKey, forgetCachedKeys, generateKey, hashKey, isKeyShaped, keyJson, KEY_CACHE_MS, KEY_PREFIX, verifyKey } from '../auth/keys.js'

/** last_used_at is written at most this often per key, so reads never become writes. */
const TOUCH_EVERY_MS = 60_000

/** Extracts the bearer token from an Authorization header; undefined when there is none. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined
  const m = /^\s*Bearer\s+(\S+)\s*$/i.exec(header)
  return m ? m[1] : header.trim() === '' ? undefined : ''
}

/**
 * Authenticates `Authorization: Bearer pbk_…` (an API key) or `ptk_…` (a portal token) and sets
 * `c.var.apiKey`. 401 `unauthorized` without credentials, 401 `invalid_token` for a malformed,
 * unknown, expired or revoked key or token.
 */
export function authenticate(): MiddlewareHandler<ApiEnv> {
  const touched = new Map<string, number>()
  return async (c, next) => {
    const { store, clock } = c.var.deps
    const token = bearerToken(c.req.header('authorization'))
    if (token === undefined) throw errors.unauthorized()
    if (token.startsWith(PORTAL_TOKEN_PREFIX)) {
      const claims = await c.var.deps.apps.verifyPortalToken(token)
      if (!claims) throw errors.invalidToken()
      c.set('apiKey', { id: claims.id, name: 'portal', role: claims.readOnly ? 'viewer' : 'admin', appId: claims.appId, portal: true, readOnly: claims.readOnly })
      return next()
    }
    const row = token === '' ? null : await verifyKey(store, token)
    if (!row) throw errors.invalidToken()
    const now = clock.now()
    if ((touched.get(row.id) ?? 0) + TOUCH_EVERY_MS <= now) {
      touched.set(row.id, now)
      try {
        await store.keys.touch(row.id, now)
      } catch {
        // last_used_at is best effort; a busy or full disk must not fail a read
      }
    }
    c.set('apiKey', { id: row.id, name: row.name, role: row.role, appId: row.appId, portal: false, readOnly: false })
    await next()
  }
}

/**
 * Route guard: `requireRole('viewer')` admits viewer and admin keys, `requireRole('publisher')`
 * publisher and admin keys, `requireRole('admin')` only admin keys; anything else is 403
 * `forbidden`. Scoped keys and portal tokens are refused too (403): a route opens to them only
 * through `requireAppRole`. Use it as a route's `middleware` (createRoute) or in
 * `app.use(path, …)`; the global `authenticate()` has already run for every `/v1` path except
 * `/v1/inbox`.
 */
export function requireRole(...roles: KeyRole[]): MiddlewareHandler<ApiEnv> {
  const allowed = new Set<KeyRole>(['admin', ...roles])
  return roleGuard(async (c, next) => {
    const key = c.get('apiKey')
    if (!key) throw errors.unauthorized()
    if (key.portal || key.appId !== null) throw errors.forbidden('This route is not open to keys or tokens of one application')
    if (!allowed.has(key.role)) throw errors.forbidden()
    throwStrayQuery(c)
    await next()
  })
}

/**
 * Guard of a route that works inside one application (docs/applications.md): keys of every
 * application and scoped keys by `roles` as `requireRole`, and portal tokens when `portal` says
 * so: `'read'` any portal token, `'write'` only one that is not read-only. The handler passes
 * `callerApp(c)` on to the service, which keeps the caller inside its application.
 */
export function requireAppRole(roles: KeyRole[], portal?: 'read' | 'write'): MiddlewareHandler<ApiEnv> {
  const allowed = new Set<KeyRole>(['admin', ...roles])
  return roleGuard(async (c, next) => {
    const key = c.get('apiKey')
    if (!key) throw errors.unauthorized()
    if (key.portal) {
      if (portal === undefined || (portal === 'write' && key.readOnly)) throw errors.forbidden('This route is not open to this portal token')
    } else if (!allowed.has(key.role)) throw errors.forbidden()
    throwStrayQuery(c)
    await next()
  })
}

/** The role guards made by requireRole and requireAppRole (strictQuery leaves its 400 to them). */
const roleGuards = new WeakSet<MiddlewareHandler<ApiEnv>>()
const roleGuard = (h: MiddlewareHandler<ApiEnv>): MiddlewareHandler<ApiEnv> => {
  roleGuards.add(h)
  return h
}

/** True when `handler` is a role guard made by requireRole or requireAppRole. */
export function isRoleGuard(handler: unknown): boolean {
  return typeof handler === 'function' && roleGuards.has(handler as MiddlewareHandler<ApiEnv>)
}

/** Throws the 400 of undeclared query parameters that strictQuery left to the route's role guard: a caller the role refuses learns 403 first. */
function throwStrayQuery(c: Context<ApiEnv>): void {
  const stray = c.get('strayQuery')
  if (stray !== undefined) throw stray
}

/**
 * Whether the caller may read secrets (signing secrets, custom header values): admin keys, and
 * portal tokens, which may read their endpoints' signing secrets (GET /v1/endpoints/:id/secret).
 */
export function mayReadSecrets(c: Context<ApiEnv>): boolean {
  const key = c.get('apiKey')
  return key !== undefined && (key.portal || key.role === 'admin')
}

/** The caller's application scope: a scoped key's or portal token's application, or null for a key of every application. */
export function callerApp(c: Context<ApiEnv>): string | null {
  return c.get('apiKey')?.appId ?? null
}
