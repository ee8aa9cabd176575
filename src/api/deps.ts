import type { AppError } from '../errors.js'
import type { Config } from '../config.js'
import type { Log } from '../log.js'
import type { Clock } from '../lib/clock.js'
import type { Store } from '../store/index.js'
import type { KeyRole } from '../store/keys.js'
import type { NotifyService } from '../notify/service.js'
import type { WebhookService } from '../webhooks/types.js'
import type { AppService } from '../apps/service.js'
import type { RequestService } from '../webhooks/requests.js'

/** What the API needs to render /metrics; implemented by src/metrics.ts. */
export interface MetricsSource {
  readonly contentType: string
  render(): Promise<string>
}

/** Everything the HTTP layer is built from; `createApp(deps)` takes it. */
export interface ApiDeps {
  readonly store: Store
  readonly config: Config
  readonly log: Log
  readonly clock: Clock
  readonly webhooks: WebhookService
  /** Applications and portal tokens (docs/applications.md); createApp makes one when absent. */
  readonly apps?: AppService
  /** The notification service (docs/notifications-basics.md); the notify routes are mounted only when present. */
  readonly notify?: NotifyService
  readonly metrics?: MetricsSource
  /** Durable HTTP requests (docs/requests.md); the /v1/requests routes answer 404 without it. */
  readonly requests?: RequestService
  /** The built console and portal (dist/web by default; null serves none). */
  readonly webDir?: string | null
  /** Where the built inbox element lives (default dist/sdk of this package). */
  readonly sdkDir?: string
  /** Group-commit window for POST /v1/events; 0 (default) = coalesce one event-loop turn. */
  readonly groupCommitMaxBatch?: number
}

/** The authenticated caller, set on the context by the auth middleware: an API key or a portal token. */
export interface AuthedKey {
  id: string
  name: string
  role: KeyRole
  /** The application a scoped key or a portal token acts in; null for a key of every application. */
  appId: string | null
  /** True for a portal token (`ptk_…`): only the portal's routes admit it. */
  portal: boolean
  /** A read-only portal token: only the portal's GET routes. */
  readOnly: boolean
}

/** The Hono environment of every Postbox route file. */
export interface ApiEnv {
  Variables: {
    deps: ApiDeps & { readonly apps: AppService }
    apiKey: AuthedKey
    /** The end user of an inbox route, set by its token check before validation runs. */
    inboxUser: string
    /** The one application that user token is limited to, or null. */
    inboxApp: string | null
    /** When that user's token expires (epoch ms); an open stream ends then. */
    inboxTokenExpires: number
    /** Undeclared query parameters of a route with a role guard: thrown by the guard once the role is checked (strictQuery). */
    strayQuery: AppError | undefined
  }
}
