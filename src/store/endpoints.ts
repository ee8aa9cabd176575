import { type Page } from '../lib/cursor.js'
/** A secret still sent during its rotation grace period. */
export interface PreviousSecret {
  secret: string
  expiresAt: number
}

/** The settings of an endpoint that a user can change. */
export interface EndpointSettings {
  url: string
  description: string
  eventTypes: string[] | null
  headers: Record<string, string>
  method: 'POST' | 'PUT'
  timeoutMs: number
  maxConcurrency: number
  rateLimit: number | null
  ordered: boolean
  retrySchedule: number[] | null
  signature: 'standard' | 'hmac-sha256'
  metadata: Record<string, unknown>
  /** Percent of the breaker window that must fail to open it; null = the global setting. */
  breakerThreshold?: number | null
  /** The first breaker pause; null = the global setting. */
  breakerPauseMs?: number | null
  /** The longest breaker pause; null = the global setting. */
  breakerMaxPauseMs?: number | null
}

/** How an endpoint gets its deliveries: sent by the dispatcher (`push`) or claimed by consumers (`pull`, docs/pull-endpoints.md). */
export type EndpointMode = 'push' | 'pull'

/** An endpoint row, mapped to camelCase with its JSON columns parsed. */
export interface EndpointRow extends EndpointSettings {
  id: string
  breakerThreshold: number | null
  breakerPauseMs: number | null
  breakerMaxPauseMs: number | null
  /** The application the endpoint belongs to (never changes). */
  appId: string
  secret: string
  previousSecrets: PreviousSecret[]
  disabled: boolean
  disabledReason: string | null
  deletedAt: number | null
  lastSuccessAt: number | null
  lastFailureAt: number | null
  failingSince: number | null
  consecutiveFailures: number
  failuresSinceSuccess: number
  pausedUntil: number | null
  pauseCount: number
  /** The breaker's window: latest attempts, newest in bit 0, 1 = failure (see delivery/breaker.ts). */
  recentFailures: number
  recentAttempts: number
  createdAt: number
  updatedAt: number
  /** push or pull; set at create, never changes. */
  mode: EndpointMode
}

/** The endpoints table: configuration, secrets and health. Deleted rows stay (soft delete). */
export interface EndpointsStore {
  insert(row: EndpointSettings & { id: string; appId?: string; secret: string; disabled: boolean; disabledReason: string | null; mode?: EndpointMode }, now: number): void
  /** A live (not deleted) endpoint, or null. */
  get(id: string): EndpointRow | null
  /** Any endpoint, deleted or not (deliveries keep pointing at deleted ones). */
  getAny(id: string): EndpointRow | null
  /** Enabled, non-deleted endpoints: the fan-out candidates. */
  active(): EndpointRow[]
  /** Enabled, non-deleted endpoints of one application (indexed). */
  activeForApp(appId: string): EndpointRow[]
  /** Soft-deletes every live endpoint of an application; returns their ids. */
  removeForApp(appId: string, now: number): string[]
  list(opts: { limit: number; cursor?: string | null; appId?: string }): Page<EndpointRow>
  update(id: string, settings: EndpointSettings, now: number): boolean
  softDelete(id: string, now: number): boolean
  setSecret(id: string, secret: string, previous: PreviousSecret[], now: number): boolean
  /**
   * Counts a success: closes the breaker and returns the time its pause had held the endpoint's
   * rows until (null when it was not paused), and whether the endpoint is now steadily healthy
   * (a full window of successes: further successes need only the time written).
   */
  recordSuccess(id: string, now: number): { pausedUntil: number | null; steady: boolean }
  /** Counts a failure and returns the endpoint's new health. */
  recordFailure(id: string, breakerFailure: boolean, now: number): EndpointRow | null
  pause(id: string, until: number): void
  /** Disables a live, enabled endpoint; false when it already was. */
  disable(id: string, reason: string, now: number): boolean
  enable(id: string, now: number): boolean
  /**
   * Increases on every change of settings, secrets, enabled state or circuit state made through
   * this store (not on plain success/failure counters), and within FOREIGN_CHANGE_CHECK_MS of any
   * commit by another connection; caches compare it to know they are stale.
   */
  version(): number
  /**
   * Like `version`, but moves only when the set of live endpoints or their delivery settings may
   * have changed (create, update, delete, secret, enable, disable, another connection's commit),
   * not on health changes: what the fan-out's cache of all endpoints compares.
   */
  settingsVersion(): number
  /** Moves both versions, so every cache reloads (after a rolled-back transaction). */
  invalidate(): void
}

/** An endpoints row as both backends read it: JSON columns as text, flags as 0/1. */
export type RawEndpointRow = Omit<EndpointRow, 'eventTypes' | 'headers' | 'retrySchedule' | 'previousSecrets' | 'metadata' | 'ordered' | 'disabled'> & {
  eventTypes: string | null
  headers: string
  retrySchedule: string | null
  previousSecrets: string
  metadata: string
  ordered: number
  disabled: number
}

/** An endpoints row mapped to EndpointRow (JSON parsed, flags as booleans); null for none. */
export function mapEndpointRow(r: RawEndpointRow | undefined): EndpointRow | null {
  if (!r) return null
  return {
    ...r,
    eventTypes: r.eventTypes === null ? null : (JSON.parse(r.eventTypes) as string[]),
    headers: JSON.parse(r.headers) as Record<string, string>,
    retrySchedule: r.retrySchedule === null ? null : (JSON.parse(r.retrySchedule) as number[]),
    previousSecrets: JSON.parse(r.previousSecrets) as PreviousSecret[],
    metadata: JSON.parse(r.metadata) as Record<string, unknown>,
    ordered: r.ordered === 1,
    disabled: r.disabled === 1,
  }
}

/** How often `version()` looks for commits by other connections (the CLI, another process). */
export const FOREIGN_CHANGE_CHECK_MS = 1000
