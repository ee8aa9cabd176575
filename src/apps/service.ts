import type { z } from '@hono/zod-openapi'
import type { Config } from '../config.js'
import { AppError, errors } from '../errors.js'
import { toIso, type Clock } from '../lib/clock.js'
import { pageSize, type Page } from '../lib/cursor.js'
import { newId } from '../lib/ids.js'
import { DEFAULT_APP, isAppCursor, type AppRow } from '../store/apps.js'
import type { Store } from '../store/index.js'
import { issuePortalToken, verifyPortalToken, type PortalClaims } from '../auth/portal-tokens.js'
import { forgetCachedKeys } from '../auth/keys.js'
import { AppCreate, AppUpdate, DEFAULT_PORTAL_TTL_S, PortalTokenIn, type AppOut, type PortalTokenOut } from './schemas.js'

export { DEFAULT_APP } from '../store/apps.js'

/** An application as the API shows it. */
export type AppOutput = z.infer<typeof AppOut>
/** `POST /v1/apps` input. */
export type AppCreateInput = z.input<typeof AppCreate>
/** `PATCH /v1/apps/:id` input. */
export type AppUpdateInput = z.input<typeof AppUpdate>
/** `POST /v1/apps/:id/portal-tokens` input. */
export type PortalTokenInput = z.input<typeof PortalTokenIn>
/** A new portal token. */
export type PortalTokenOutput = z.infer<typeof PortalTokenOut>

/**
 * THE check that an application exists (live, not deleted); 404 `not_found` when it does not.
 * Every feature that takes an `app_id` calls this (or `appForWrite` / `appFilter`, which do).
 */
export async function requireApp(store: Store, appId: string): Promise<string> {
  if (!(await store.apps.exists(appId))) throw errors.notFound('Application')
  return appId
}

/**
 * The application a write goes to. A scoped caller (`callerApp` set: a scoped key or a portal
 * token) always writes to its own, whatever the body asked; any other caller to `requested`, or
 * `default` when it named none. 404 when that application does not exist.
 */
export function appForWrite(store: Store, callerApp: string | null | undefined, requested: string | undefined): Promise<string> {
  if (callerApp) return requireApp(store, callerApp)
  return requireApp(store, requested ?? DEFAULT_APP)
}

/**
 * The `?app_id=` filter of a list: a scoped caller sees only its own application (another one
 * named is 404, as if it did not exist); any other caller the one named (404 when unknown), or
 * every application when none is named (undefined).
 */
export async function appFilter(store: Store, callerApp: string | null | undefined, requested: string | undefined): Promise<string | undefined> {
  if (callerApp) {
    if (requested !== undefined && requested !== callerApp) throw errors.notFound('Application')
    return callerApp
  }
  return requested === undefined ? undefined : requireApp(store, requested)
}

/** True when a scoped caller may see a row of `rowApp` (unscoped callers see every row). */
export function visibleTo(callerApp: string | null | undefined, rowApp: string): boolean {
  return !callerApp || callerApp === rowApp
}

function parse<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const r = schema.safeParse(input)
  if (r.success) return r.data
  throw errors.validation(r.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })))
}

function appOut(a: AppRow): AppOutput {
  return { id: a.id, name: a.name, metadata: a.metadata, created_at: toIso(a.createdAt), updated_at: toIso(a.updatedAt) }
}

/** The applications service: CRUD, delete with its endpoints, and portal tokens. */
export interface AppService {
  create(input: AppCreateInput): Promise<AppOutput>
  list(opts?: { limit?: number; cursor?: string | null }): Promise<Page<AppOutput>>
  /** One application with its counts of endpoints and of deliveries by status. */
  get(id: string): Promise<AppOutput>
  update(id: string, patch: AppUpdateInput): Promise<AppOutput>
  /** Deletes the application, its endpoints and portal tokens, and cancels its pending deliveries. */
  remove(id: string): Promise<{ deleted: true; endpoints: number; cancelled: number }>
  /** Issues a portal token (`ptk_…`) for the application. */
  portalToken(id: string, input?: PortalTokenInput): Promise<PortalTokenOutput>
  /** The claims of a live portal token: signed, unexpired, and its row still stored; null otherwise. */
  verifyPortalToken(token: string): Promise<PortalClaims | null>
}

/** Creates the applications service. `portalKey` signs portal tokens (see auth/portal-tokens.ts). */
export function createAppService(deps: { store: Store; config: Config; clock: Clock; portalKey: Buffer }): AppService {
  const { store, config, clock, portalKey } = deps
  const get = async (s: Store, id: string): Promise<AppRow> => {
    const a = await s.apps.get(id)
    if (!a) throw errors.notFound('Application')
    return a
  }
  return {
    async create(input) {
      const i = parse(AppCreate, input)
      const now = clock.now()
      const id = i.id ?? newId('app', now)
      const row = await store.tx(async (s) => ((await s.apps.insert({ id, name: i.name, metadata: i.metadata ?? {} }, now)) ? get(s, id) : null))
      if (!row) throw errors.conflict(`Application ${id} already exists (or existed: a deleted application's id is not reused)`)
      return appOut(row)
    },
    async list(opts = {}) {
      if (opts.cursor && !isAppCursor(opts.cursor)) throw errors.validation([{ field: 'cursor', message: 'is not a cursor returned by this list', in: 'query' }])
      const page = await store.apps.list({ limit: pageSize(opts.limit), cursor: opts.cursor ?? null })
      return { data: page.data.map(appOut), next_cursor: page.next_cursor }
    },
    async get(id) {
      const a = await get(store, id)
      return { ...appOut(a), counts: await store.apps.counts(id) }
    },
    async update(id, patch) {
      const p = parse(AppUpdate, patch)
      // Read and write in one transaction: a concurrent update's name is not overwritten by a stale one.
      const row = await store.tx(async (s) => {
        const a = await get(s, id)
        await s.apps.update(id, { name: p.name ?? a.name, metadata: p.metadata ?? a.metadata }, clock.now())
        return get(s, id)
      })
      return appOut(row)
    },
    async remove(id) {
      if (id === DEFAULT_APP) throw errors.conflict('The default application cannot be deleted')
      const now = clock.now()
      const result = await store.tx(async (s) => {
        await get(s, id)
        const endpoints = await s.endpoints.removeForApp(id, now)
        let cancelled = 0
        for (const ep of endpoints) cancelled += await s.deliveries.cancelForEndpoint(ep, now)
        // Its durable requests are its deliveries too (docs/requests.md).
        cancelled += await s.requests.cancelForApp(id, now)
        if (!(await s.apps.softDelete(id, now))) throw errors.notFound('Application')
        return { deleted: true as const, endpoints: endpoints.length, cancelled }
      })
      // Its scoped keys were revoked in the same transaction: no verification may be remembered.
      forgetCachedKeys(store)
      return result
    },
    async portalToken(id, input = {}) {
      const i = parse(PortalTokenIn, input)
      const now = clock.now()
      const claims: PortalClaims = { id: newId('ptk', now), appId: id, readOnly: i.read_only ?? false, expiresAt: now + (i.ttl_seconds ?? DEFAULT_PORTAL_TTL_S) * 1000 }
      // In one transaction with the check: a token is never stored for an application deleted meanwhile.
      const app = await store.tx(async (s) => {
        const row = await get(s, id)
        await s.apps.insertPortalToken({ ...claims, createdAt: now })
        return row
      })
      const token = issuePortalToken(portalKey, claims, app.name)
      return { token, url: `${config.publicUrl}/portal#token=${token}`, expires_at: toIso(claims.expiresAt), read_only: claims.readOnly, app_id: id }
    },
    async verifyPortalToken(token) {
      const claims = verifyPortalToken(portalKey, token, clock.now())
      if (!claims) return null
      const row = await store.apps.getPortalToken(claims.id)
      return row && row.appId === claims.appId && (await store.apps.exists(claims.appId)) ? claims : null
    },
  }
}

/** The 400 of a write that would move an endpoint to another application. */
export function appMoveRefused(): AppError {
  return errors.validation([{ path: 'app_id', message: 'an endpoint never moves to another application' }])
}
