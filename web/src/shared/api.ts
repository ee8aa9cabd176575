import createClient, { type Client } from 'openapi-fetch'
import type { components, paths } from './api-types'

/** The typed client of the v1 API (generated from /openapi.json). */
export type Api = Client<paths>
/** The schemas of /openapi.json, by name. */
export type Schemas = components['schemas']

/** An error answer of the API: `{error: {code, message, details}}` with its HTTP status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message)
  }
}

/** A client that sends `Authorization: Bearer <token>` on every call, to this page's own origin. */
export function makeApi(token: string, onUnauthorized?: (e: ApiError) => void): Api {
  const api = createClient<paths>({ baseUrl: location.origin, headers: { authorization: `Bearer ${token}` } })
  if (onUnauthorized) {
    api.use({
      async onResponse({ response }) {
        if (response.status === 401) {
          const e = await toApiError(response.clone())
          onUnauthorized(e)
        }
        return undefined
      },
    })
  }
  return api
}

async function toApiError(response: Response): Promise<ApiError> {
  let body: unknown = null
  try {
    body = await response.json()
  } catch {
    // not JSON: a proxy's page, say
  }
  const err = (body as { error?: { code?: string; message?: string; details?: unknown } } | null)?.error
  return new ApiError(response.status, err?.code ?? 'http_' + response.status, err?.message ?? `HTTP ${response.status}`, err?.details)
}

/** Awaits an openapi-fetch call and returns its data, or throws its error as an ApiError. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let r: { data?: T; error?: unknown; response: Response }
  try {
    r = await call
  } catch (e) {
    throw new ApiError(0, 'network_error', `The server could not be reached (${(e as Error).message})`)
  }
  if (!r.response.ok) {
    const err = (r.error as { error?: { code?: string; message?: string; details?: unknown } } | undefined)?.error
    throw new ApiError(r.response.status, err?.code ?? 'http_' + r.response.status, err?.message ?? `HTTP ${r.response.status}`, err?.details)
  }
  return r.data as T
}

/** A human sentence for an error, with the field issues of validation_failed. */
export function describeError(e: unknown): string {
  if (!(e instanceof ApiError)) return String((e as Error)?.message ?? e)
  const issues = Array.isArray(e.details) ? (e.details as { field?: string; message?: string }[]).map((d) => `${d.field ?? ''} ${d.message ?? ''}`.trim()) : []
  return issues.length ? `${e.message}: ${issues.join('; ')}` : e.message
}

/** sessionStorage only: a key or token lives as long as the tab, never in localStorage or a URL. */
export const session = {
  get: (name: string): string | null => {
    try {
      return sessionStorage.getItem(name)
    } catch {
      return null
    }
  },
  set: (name: string, value: string): void => {
    try {
      sessionStorage.setItem(name, value)
    } catch {
      // storage disabled: the key lives in memory for this page only
    }
  },
  clear: (name: string): void => {
    try {
      sessionStorage.removeItem(name)
    } catch {}
  },
}

type LooseCall = (
  path: string,
  init?: { params?: { path?: Record<string, string>; query?: Record<string, unknown> }; body?: unknown },
) => Promise<{ data?: unknown; error?: unknown; response: Response }>

/** The same client for routes of another part of the API whose generated types this build does not carry yet. */
export interface LooseApi {
  GET: LooseCall
  POST: LooseCall
  PUT: LooseCall
  PATCH: LooseCall
  DELETE: LooseCall
}

/** `api` without path typing (see LooseApi). */
export const loose = (api: Api): LooseApi => api as unknown as LooseApi
