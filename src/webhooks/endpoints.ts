import type { Config } from '../config.js'
import { errors } from '../errors.js'
import type { Clock } from '../lib/clock.js'
import { newId } from '../lib/ids.js'
import { parseDuration } from '../lib/duration.js'
import { pageSize } from '../lib/cursor.js'
import type { Store } from '../store/index.js'
import type { EndpointRow, EndpointSettings } from '../store/endpoints.js'
import { ENDPOINT_DISABLED } from '../delivery/health.js'
import type { FanOut } from './fan-out.js'
import type { Catalog } from '../apps/catalog.js'
import { appFilter, appForWrite, appMoveRefused } from '../apps/service.js'
import { endpointOut } from './present.js'
import { checkUrl, headerIssues, parseOrThrow, parseRetrySchedule, throwIfIssues, urlPolicy, type Issue } from './rules.js'
import { EndpointCreate, EndpointUpdate, RecoverIn, RotateSecretIn, TestIn } from './schemas.js'
import { generateSecret, normaliseSecret } from './secrets.js'
import type { AppScope, WebhookService } from './types.js'

/** Reason stored when a user disables an endpoint through the API. */
export const MANUAL_DISABLE = 'manual'
/** Rotated secrets kept at most (the newest ones). */
const MAX_PREVIOUS_SECRETS = 5

type Patch = Partial<Omit<EndpointSettings, 'retrySchedule'>> & { retry_schedule?: (string | number)[] | null }

/** The endpoint half of the WebhookService. */
export function createEndpointService(deps: { store: Store; config: Config; clock: Clock; fanOut: FanOut; catalog: Catalog }): WebhookService['endpoints'] {
  const { store, config, clock, fanOut, catalog } = deps
  const policy = urlPolicy(config.allowNetworks)

  /** The catalog's issues with `event_types` (strict mode); read before any transaction, as it may reload the catalog. */
  const typeIssues = async (p: Patch): Promise<Issue[]> => (p.eventTypes !== undefined ? catalog.subscriptionIssues(p.eventTypes) : [])

  /** Validates settings on top of the zod shape (with the catalog's `typeIssues`) and merges them over `base`. */
  const settingsFrom = (p: Patch & { url?: string }, base: EndpointSettings, typeIssues: Issue[]): EndpointSettings => {
    const issues: Issue[] = []
    const out: EndpointSettings = { ...base }
    if (p.url !== undefined) out.url = checkUrl(p.url, policy)
    if (p.headers !== undefined) {
      issues.push(...headerIssues(p.headers))
      out.headers = p.headers
    }
    issues.push(...typeIssues)
    if (p.retry_schedule !== undefined) {
      if (p.retry_schedule === null) out.retrySchedule = null
      else {
        const r = parseRetrySchedule(p.retry_schedule)
        if ('issues' in r) issues.push(...r.issues)
        else out.retrySchedule = r.schedule
      }
    }
    for (const k of ['description', 'eventTypes', 'method', 'timeoutMs', 'maxConcurrency', 'rateLimit', 'ordered', 'signature', 'metadata', 'breakerThreshold', 'breakerPauseMs', 'breakerMaxPauseMs'] as const) {
      if (p[k] !== undefined) (out as unknown as Record<string, unknown>)[k] = p[k]
    }
    throwIfIssues(issues)
    return out
  }

  const camel = (i: Record<string, unknown>): Patch & { url?: string } => ({
    url: i.url as string | undefined,
    description: i.description as string | undefined,
    eventTypes: i.event_types as string[] | null | undefined,
    headers: i.headers as Record<string, string> | undefined,
    method: i.method as 'POST' | 'PUT' | undefined,
    timeoutMs: i.timeout_ms as number | undefined,
    maxConcurrency: i.max_concurrency as number | undefined,
    rateLimit: i.rate_limit as number | null | undefined,
    ordered: i.ordered as boolean | undefined,
    retry_schedule: i.retry_schedule as (string | number)[] | null | undefined,
    signature: i.signature as 'standard' | 'hmac-sha256' | undefined,
    metadata: i.metadata as Record<string, unknown> | undefined,
    breakerThreshold: i.breaker_threshold as number | null | undefined,
    breakerPauseMs: i.breaker_pause_ms as number | null | undefined,
    breakerMaxPauseMs: i.breaker_max_pause_ms as number | null | undefined,
  })

  const secretOrThrow = (mode: EndpointSettings['signature'], secret: string | undefined): string => {
    if (secret === undefined) return generateSecret()
    const r = normaliseSecret(mode, secret)
    if ('error' in r) throw errors.validation([{ path: 'secret', message: r.error }])
    return r.secret
  }

  const setDisabled = async (s: Store, ep: EndpointRow, disabled: boolean, now: number): Promise<void> => {
    if (disabled && !ep.disabled) {
      await s.endpoints.disable(ep.id, MANUAL_DISABLE, now)
      await s.deliveries.killPendingForEndpoint(ep.id, ENDPOINT_DISABLED, now)
    } else if (!disabled && ep.disabled) await s.endpoints.enable(ep.id, now)
  }

  const out = async (id: string, scope?: AppScope): Promise<ReturnType<typeof endpointOut>> => endpointOut(await fanOut.endpointOr404(id, scope), clock.now())

  return {
    async create(input, scope) {
      const i = parseOrThrow(EndpointCreate, input)
      const mode = i.mode ?? 'push'
      throwIfIssues(modeIssues(mode, i))
      const appId = await appForWrite(store, scope, i.app_id)
      const patch = camel(i)
      const settings = settingsFrom(patch, {
        url: '', description: '', eventTypes: null, headers: {}, method: 'POST', timeoutMs: config.requestTimeoutMs,
        maxConcurrency: 16, rateLimit: null, ordered: false, retrySchedule: null, signature: 'standard', metadata: {},
      }, await typeIssues(patch))
      // A pull endpoint signs nothing: its secret is '' (docs/pull-endpoints.md).
      const secret = mode === 'pull' ? '' : secretOrThrow(settings.signature, i.secret)
      const now = clock.now()
      const id = newId('ep', now)
      const disabled = i.disabled ?? false
      await store.tx((s) => s.endpoints.insert({ ...settings, id, appId, secret, disabled, disabledReason: disabled ? MANUAL_DISABLE : null, mode }, now))
      return mode === 'pull' ? out(id) : { ...(await out(id)), secret }
    },
    async list(opts = {}, scope) {
      const appId = await appFilter(store, scope, opts.app_id)
      const page = await store.endpoints.list({ limit: pageSize(opts.limit), cursor: opts.cursor ?? null, ...(appId !== undefined ? { appId } : {}) })
      const now = clock.now()
      return { data: page.data.map((e) => endpointOut(e, now)), next_cursor: page.next_cursor }
    },
    get: out,
    async update(id, patch, scope) {
      const p = parseOrThrow(EndpointUpdate, patch)
      const seen = await fanOut.endpointOr404(id, scope)
      if (p.app_id !== undefined && p.app_id !== seen.appId) throw appMoveRefused()
      const changes = camel(p)
      const issues = await typeIssues(changes)
      const now = clock.now()
      await store.tx(async (s) => {
        // Read again inside the transaction: the merge, the secret filter and the disable act on
        // the row as it is now, not as a concurrent update left it a moment before.
        const ep = await fanOut.endpointOr404(id, scope, s)
        throwIfIssues(updateModeIssues(ep.mode, p))
        const settings = settingsFrom(changes, ep, issues)
        if (settings.signature !== ep.signature && 'error' in normaliseSecret(settings.signature, ep.secret)) {
          throw errors.validation([{ path: 'signature', message: 'the current secret does not fit this mode; rotate it with a new secret first' }])
        }
        await s.endpoints.update(id, settings, now)
        // Secrets in their grace period only mean something in the mode they were made for.
        if (settings.signature !== ep.signature && ep.previousSecrets.length > 0) {
          const fit = ep.previousSecrets.filter((q) => !('error' in normaliseSecret(settings.signature, q.secret)))
          await s.endpoints.setSecret(id, ep.secret, fit, now)
        }
        if (p.disabled !== undefined) await setDisabled(s, ep, p.disabled, now)
      })
      return out(id)
    },
    async remove(id, scope) {
      const now = clock.now()
      const cancelled = await store.tx(async (s) => {
        await fanOut.endpointOr404(id, scope, s)
        await s.endpoints.softDelete(id, now)
        return s.deliveries.cancelForEndpoint(id, now)
      })
      return { deleted: true, cancelled }
    },
    getSecret: async (id, scope) => ({ secret: (await fanOut.endpointOr404(id, scope)).secret }),
    async rotateSecret(id, input = {}, scope) {
      const i = parseOrThrow(RotateSecretIn, input)
      return store.tx(async (s) => {
        // One transaction from read to write: two rotations at once each keep the other's secret in the grace list.
        const ep = await fanOut.endpointOr404(id, scope, s)
        if (ep.mode === 'pull') throw errors.conflict('A pull endpoint has no signing secret')
        const secret = secretOrThrow(ep.signature, i.secret)
        const now = clock.now()
        const grace = i.grace_seconds !== undefined ? i.grace_seconds * 1000 : config.secretGraceMs
        const previous = ep.previousSecrets.filter((p) => p.expiresAt > now && p.secret !== secret)
        if (grace > 0 && ep.secret !== secret) previous.unshift({ secret: ep.secret, expiresAt: now + grace })
        await s.endpoints.setSecret(id, secret, previous.slice(0, MAX_PREVIOUS_SECRETS), now)
        return { secret }
      })
    },
    async enable(id, scope) {
      await store.tx(async (s) => {
        const ep = await fanOut.endpointOr404(id, scope, s)
        await s.endpoints.enable(ep.id, clock.now())
      })
      return out(id)
    },
    async recover(id, input, scope) {
      const i = parseOrThrow(RecoverIn, input)
      const now = clock.now()
      const since = timeOrAgo(i.since, now)
      const until = i.until !== undefined ? timeOrAgo(i.until, now) : now + 1
      const queued = await store.tx(async (s) => {
        // docs/delivery.md: recover brings dead deliveries back after a re-enable; while disabled they
        // would only be killed again.
        if ((await fanOut.endpointOr404(id, scope, s)).disabled) throw errors.conflict('Endpoint is disabled; enable it first')
        if (since >= until) throw errors.validation([{ path: 'since', message: 'must be before until' }])
        return s.deliveries.recover(id, since, until, now)
      })
      return { queued }
    },
    async test(id, input = {}, scope) {
      const i = parseOrThrow(TestIn, input ?? {})
      if ((await fanOut.endpointOr404(id, scope)).disabled) throw errors.conflict('Endpoint is disabled; enable it first')
      const data = i.event_type !== undefined ? await catalog.exampleFor(i.event_type) : null
      return store.tx(async (s) => {
        const ep = await fanOut.endpointOr404(id, scope, s)
        if (ep.disabled) throw errors.conflict('Endpoint is disabled; enable it first')
        // A named catalog type sends its example (docs/applications.md); none sends postbox.ping.
        const ev = i.event_type !== undefined && data !== null
          ? { appId: ep.appId, type: i.event_type, data }
          : { appId: ep.appId, type: 'postbox.ping', data: { endpoint_id: id, message: 'This is a test event from Postbox' } }
        return fanOut.store(s, ev, ep)
      })
    },
  }
}

/** The settings a pull endpoint cannot have (it sends no request), and a push endpoint's required url. */
const PUSH_ONLY = ['url', 'secret', 'signature', 'headers', 'method'] as const

/** What is wrong with a create body for its `mode`: a pull endpoint given push-only settings, a push endpoint without url. */
function modeIssues(mode: 'push' | 'pull', i: Record<string, unknown>): Issue[] {
  if (mode === 'push') return i.url === undefined ? [{ path: 'url', message: 'required for a push endpoint' }] : []
  return PUSH_ONLY.filter((k) => i[k] !== undefined).map((k) => ({ path: k, message: 'a pull endpoint has no ' + k }))
}

/** What is wrong with a PATCH for an endpoint of `mode`: `mode` never changes, and a pull endpoint takes no push-only settings. */
function updateModeIssues(mode: 'push' | 'pull', p: Record<string, unknown>): Issue[] {
  const issues: Issue[] = p.mode !== undefined && p.mode !== mode ? [{ path: 'mode', message: 'never changes' }] : []
  if (mode === 'pull') issues.push(...PUSH_ONLY.filter((k) => p[k] !== undefined).map((k) => ({ path: k, message: 'a pull endpoint has no ' + k })))
  return issues
}

/** An ISO time, or a duration back from `now` (`1h` is an hour ago), in epoch milliseconds. */
function timeOrAgo(text: string, now: number): number {
  const ago = parseDuration(text)
  return ago !== null ? now - ago : Date.parse(text)
}
