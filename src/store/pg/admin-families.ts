/**
 * The pgbase families together, for `openPgStore`: made once over the pool and again over each
 * transaction's connection, with one shared state so caches (known applications, the catalog's
 * version) are the store's, not one transaction's.
 */
import type { ClockRepairStore } from '../clock-repair.js'
import type { Async } from '../contract.js'
import type { EventTypesStore } from '../event-types.js'
import type { KeysStore } from '../keys.js'
import type { StatsStore } from '../stats.js'
import { createPgAppsStore, newPgAppsState, type PgAppsState } from './apps.js'
import { createPgClockRepairStore, type PgTransact } from './clock-repair.js'
import { createPgEventTypesStore, newPgEventTypesState, type PgEventTypesState } from './event-types.js'
import { createPgKeysStore } from './keys.js'
import type { PgQueryable } from './queryable.js'
import { createPgStatsStore } from './stats.js'

/** The state the admin families keep between calls; one per store. */
export interface PgAdminState {
  apps: PgAppsState
  eventTypes: PgEventTypesState
}

/** A fresh `PgAdminState`. */
export const newPgAdminState = (): PgAdminState => ({ apps: newPgAppsState(), eventTypes: newPgEventTypesState() })

/** keys, apps, eventTypes, stats and clockRepair on PostgreSQL. */
export interface PgAdminFamilies {
  keys: Async<KeysStore>
  apps: ReturnType<typeof createPgAppsStore>
  eventTypes: Async<EventTypesStore>
  stats: Async<StatsStore>
  clockRepair: Async<ClockRepairStore>
}

/**
 * The families over `q` (the pool, or a transaction's connection). `transact` runs the clock
 * repair's own transaction: over the pool, a new one; inside a transaction, the caller passes
 * `(fn) => fn(q)` so the repair joins it.
 */
export function createPgAdminFamilies(q: PgQueryable, state: PgAdminState, transact: PgTransact): PgAdminFamilies {
  return {
    keys: createPgKeysStore(q),
    apps: createPgAppsStore(q, state.apps),
    eventTypes: createPgEventTypesStore(q, state.eventTypes),
    stats: createPgStatsStore(q),
    clockRepair: createPgClockRepairStore(q, transact),
  }
}
