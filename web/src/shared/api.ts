import { createPostboxClient, PostboxApiError, unwrap as unwrapCall, type components, type PostboxClient } from 'postbox/client'

/** The typed client of the v1 API (postbox/client, generated from /openapi.json). */
export type Api = PostboxClient
/** The schemas of /openapi.json, by name. */
export type Schemas = components['schemas']
/** An error answer of the API: its stable `code`, HTTP `status`, message and `details`. */
export const ApiError = PostboxApiError
/** An error answer of the API (see ApiError). */
export type ApiError = PostboxApiError

/** A client that sends `Authorization: Bearer <token>` on every call, to this page's own origin. */
export function makeApi(token: string, onUnauthorized?: (e: ApiError) => void): Api {
  const api = createPostboxClient({ baseUrl: location.origin, token })
  if (onUnauthorized) {
    api.use({
      async onResponse({ response }) {
        if (response.status === 401) {
          let body: unknown = null
          try {
            body = await response.clone().json()
          } catch {
            // not JSON: a proxy's page, say
          }
          onUnauthorized(new PostboxApiError(401, body))
        }
        return undefined
      },
    })
  }
  return api
}

/** Awaits a client call and returns its data; throws an ApiError (status 0, `network_error`, when no answer came). */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  try {
    return await unwrapCall(call)
  } catch (e) {
    if (e instanceof PostboxApiError) throw e
    throw new PostboxApiError(0, { error: { code: 'network_error', message: `The server could not be reached (${(e as Error).message})` } })
  }
}

/** A human sentence for an error, with the field issues of validation_failed. */
export function describeError(e: unknown): string {
  if (!(e instanceof ApiError)) return String((e as Error)?.message ?? e)
  const issues = Array.isArray(e.details) ? (e.details as { field?: string; message?: string }[]).map((d) => `${d.field ?? ''} ${d.message ?? ''}`.trim()) : []
  const text = issues.length ? `${e.message}: ${issues.join('; ')}` : e.message
  // The one refusal a person must be able to tell apart from a typo: an address Postbox may not call.
  return e.code === 'destination_not_allowed' ? `Destination not allowed (destination_not_allowed): ${text}` : text
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
