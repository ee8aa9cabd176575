import { createRequire } from 'node:module'
import type { z } from '@hono/zod-openapi'
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js'
import type { Config } from '../config.js'
import { AppError, errors } from '../errors.js'
import { toIso, type Clock } from '../lib/clock.js'
import { pageSize, type Page } from '../lib/cursor.js'
import { isEventTypeCursor, type EventTypeRow } from '../store/event-types.js'
import type { Store } from '../store/index.js'
import { EventTypeName, EventTypePut, type EventTypeOut } from './catalog-schemas.js'
import { assessSchema, isSmallData } from './schema-bounds.js'
import { newAjv, type Ajv2020 } from './schema-engine.js'
import { validatorPool } from './schema-pool.js'

/**
 * The main thread's Ajv (schema-engine.ts), made at the first light schema compiled: an idle
 * server, or one whose catalog has no schema, never loads ajv (docs/performance.md).
 */
const mainAjv = (): Ajv2020 => newAjv(createRequire(import.meta.url))

/** Names each compiled schema uniquely in this process (the workers cache validators by it). */
let schemaSeq = 0

/** A catalog entry as the API shows it. */
export type EventTypeOutput = z.infer<typeof EventTypeOut>
/** `PUT /v1/event-types/:name` input. */
export type EventTypePutInput = z.input<typeof EventTypePut>

/** At most this many violations are listed in one `validation_failed`. */
const MAX_DETAILS = 50
/** Types Postbox publishes itself: never checked against the catalog. */
const RESERVED = /^(postbox|notification)\./

/** One schema violation, by JSON pointer into the event's `data`. */
export interface SchemaIssue {
  field: 'data'
  pointer: string
  message: string
  keyword: string
}

/** One event for `checkAll`: its type, data and application (whose jobs share one worker at a time). */
export interface CheckedEvent {
  type: string
  data: unknown
  /** Absent: the default application. */
  appId?: string | undefined
}

/** A type's schema, compiled once per version: its worker key, and its main-thread validator when light. */
interface Compiled {
  version: number
  key: string
  validate: ValidateFunction | null
}

/** The event-type catalog: its routes' service, and the check every ingested event goes through. */
export interface Catalog {
  put(name: string, input: EventTypePutInput): Promise<EventTypeOutput>
  get(name: string, opts?: { includeArchived?: boolean }): Promise<EventTypeOutput>
  list(opts?: { limit?: number; cursor?: string | null; includeArchived?: boolean }): Promise<Page<EventTypeOutput>>
  /**
   * Checks one event at ingest: 400 `event_type_archived`, `unknown_event_type` (strict mode), or
   * `validation_failed` with one detail per violation by JSON pointer, or 422
   * `schema_validation_timeout` / `schema_validation_out_of_memory` (`refresh`, then `checkAll`).
   */
  check(type: string, data: unknown, appId?: string): Promise<void>
  /**
   * Reloads the in-memory catalog when the stored one changed (one version read). Ingest calls it
   * once per request or batch, outside any transaction, then `checkAll`.
   */
  refresh(): Promise<void>
  /**
   * `check` of each event against the catalog as the last `refresh` loaded it, no store call: the
   * error of each (null when it passes), in order. A light schema with small data is validated
   * here; any other goes to the validation workers, one job per type and application.
   */
  checkAll(events: readonly CheckedEvent[]): Promise<(AppError | null)[]>
  /** Issues with an endpoint's `event_types` in strict mode: every exact type must be in the catalog. */
  subscriptionIssues(patterns: readonly string[] | null | undefined): Promise<{ path: string; message: string }[]>
  /** The example of a type for the endpoint test; 404 when unknown, 400 when archived or without an example. */
  exampleFor(name: string): Promise<Record<string, unknown>>
}

/** The pointer a violation names: for a missing or extra property, the property itself. */
function pointerOf(e: Partial<ErrorObject>): string {
  const p = (e.params ?? {}) as { missingProperty?: string; additionalProperty?: string; unevaluatedProperty?: string }
  const prop = p.missingProperty ?? p.additionalProperty ?? p.unevaluatedProperty
  const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1')
  const at = e.instancePath ?? ''
  return prop === undefined ? at : `${at}/${escape(prop)}`
}

/** Ajv's errors (from this thread or a worker) as `validation_failed` details. */
export function schemaIssues(errs: readonly Partial<ErrorObject>[] | null | undefined): SchemaIssue[] {
  return (errs ?? []).slice(0, MAX_DETAILS).map((e) => ({ field: 'data', pointer: pointerOf(e), message: e.message ?? 'is invalid', keyword: e.keyword ?? 'schema' }))
}

function out(r: EventTypeRow): EventTypeOutput {
  return {
    name: r.name,
    description: r.description,
    schema: r.schema as EventTypeOutput['schema'],
    example: r.example,
    deprecated: r.deprecated,
    archived: r.archived,
    version: r.version,
    created_at: toIso(r.createdAt),
    updated_at: toIso(r.updatedAt),
  }
}

/**
 * Creates the catalog. Schemas are compiled with Ajv (draft 2020-12, with the standard formats)
 * once per (type, version) and cached; a PUT assesses and compiles the new version first, so a
 * schema that could explode or does not compile is refused (400) and never reaches ingest.
 */
export function createCatalog(deps: { store: Store; config: Pick<Config, 'eventTypes'>; clock: Clock }): Catalog {
  const { store, config, clock } = deps
  let ajv: Ajv2020 | null = null
  const compiled = new Map<string, Compiled>()
  let types = new Map<string, EventTypeRow>()
  let loadedVersion = -1

  const refresh = async (): Promise<void> => {
    const v = await store.eventTypes.version()
    if (v === loadedVersion) return
    const all = await store.eventTypes.all()
    // Two refreshes may overlap: the later version wins, whichever finishes last.
    if (v < loadedVersion) return
    types = new Map(all.map((t) => [t.name, t]))
    loadedVersion = v
    for (const [name, c] of compiled) if (types.get(name)?.version !== c.version) compiled.delete(name)
  }

  /** The loaded type of an event, or null when it has none; throws when the type is refused. */
  const gate = (type: string): EventTypeRow | null => {
    const t = types.get(type)
    if (!t) {
      if (config.eventTypes === 'strict' && !RESERVED.test(type)) {
        throw new AppError('unknown_event_type', 400, `Event type ${type} is not in the catalog (POSTBOX_EVENT_TYPES=strict); add it with PUT /v1/event-types/${type}`)
      }
      return null
    }
    if (t.archived) throw new AppError('event_type_archived', 400, `Event type ${type} is archived and no longer accepted`)
    return t
  }

  const mismatch = (type: string, errs: readonly Partial<ErrorObject>[] | null | undefined): AppError =>
    errors.validation(schemaIssues(errs), `The data does not match the schema of event type ${type}`)

  const compile = (schema: EventTypeRow['schema']): ValidateFunction => {
    try {
      return (ajv ??= mainAjv()).compile(schema as object | boolean as object)
    } catch (err) {
      throw errors.validation([{ path: 'schema', message: `does not compile as a JSON Schema (draft 2020-12): ${(err as Error).message}` }])
    }
  }

  /**
   * The type's compiled schema. A stored schema is assessed again (it may predate the limits): only
   * a light one that compiles here is validated on this thread; the worker takes the rest, with
   * the backtracking RegExp as a fallback for patterns RE2 does not support.
   */
  const compiledFor = (t: EventTypeRow): Compiled => {
    const hit = compiled.get(t.name)
    if (hit && hit.version === t.version) return hit
    let validate: ValidateFunction | null = null
    const a = assessSchema(t.schema)
    if (a.light) {
      try {
        validate = compile(t.schema)
      } catch {}
    }
    const c = { version: t.version, key: `s${++schemaSeq}`, validate }
    compiled.set(t.name, c)
    return c
  }

  const checkAll = async (events: readonly CheckedEvent[]): Promise<(AppError | null)[]> => {
    const out: (AppError | null)[] = events.map(() => null)
    const jobs = new Map<string, { type: string; t: EventTypeRow; c: Compiled; appId: string; at: number[] }>()
    events.forEach((ev, n) => {
      try {
        const t = gate(ev.type)
        if (t === null || t.schema === null) return
        const c = compiledFor(t)
        if (c.validate && isSmallData(ev.data)) {
          if (!c.validate(ev.data)) out[n] = mismatch(ev.type, c.validate.errors)
          return
        }
        const appId = ev.appId ?? 'default'
        const k = `${appId}\u0000${ev.type}`
        const job = jobs.get(k) ?? { type: ev.type, t, c, appId, at: [] }
        job.at.push(n)
        jobs.set(k, job)
      } catch (err) {
        if (!(err instanceof AppError)) throw err
        out[n] = err
      }
    })
    await Promise.all(
      [...jobs.values()].map(async (j) => {
        try {
          const items = j.at.map((n) => events[n]!.data)
          const r = await validatorPool().run({ key: j.c.key, schema: j.t.schema, items, tenant: j.appId, cache: true, maxErrors: MAX_DETAILS, legacyRegExp: true })
          if ('compileError' in r) {
            const e = new AppError('validation_failed', 400, `The schema of event type ${j.type} does not compile: ${r.compileError}; replace it with PUT /v1/event-types/${j.type}`)
            for (const n of j.at) out[n] = e
            return
          }
          r.results.forEach((res, k) => {
            if (res) out[j.at[k]!] = mismatch(j.type, res)
          })
        } catch (err) {
          if (!(err instanceof AppError)) throw err
          for (const n of j.at) out[n] = err
        }
      }),
    )
    return out
  }

  /**
   * A PUT's schema: refused when it can explode (schema-bounds.ts), compiled and its example
   * checked on this thread when light, in a worker (deadline, heap limit) otherwise.
   */
  const checkSchema = async (schema: NonNullable<EventTypeRow['schema']>, example: EventTypeRow['example']): Promise<void> => {
    const a = assessSchema(schema)
    if (a.issues.length > 0) throw errors.validation(a.issues, 'The schema could cost too much to validate with; see docs/applications.md, "Schema limits"')
    let exampleErrors: readonly Partial<ErrorObject>[] | null | undefined = null
    if (a.light && (example === null || isSmallData(example))) {
      const validate = compile(schema)
      if (example !== null && !validate(example)) exampleErrors = validate.errors
    } else {
      const r = await validatorPool().run({ key: `put${++schemaSeq}`, schema, items: example === null ? [] : [example], tenant: 'catalog', cache: false, maxErrors: MAX_DETAILS, legacyRegExp: false })
      if ('compileError' in r) throw errors.validation([{ path: 'schema', message: `does not compile as a JSON Schema (draft 2020-12): ${r.compileError}` }])
      exampleErrors = r.results[0]
    }
    if (exampleErrors) throw errors.validation(schemaIssues(exampleErrors).map((e) => ({ ...e, field: 'example' })), 'The example does not satisfy the schema')
  }

  const readable = async (name: string, includeArchived: boolean): Promise<EventTypeRow> => {
    const t = await store.eventTypes.get(name)
    if (!t || (t.archived && !includeArchived)) throw errors.notFound('Event type')
    return t
  }

  return {
    async put(name, input) {
      const n = EventTypeName.safeParse(name)
      if (!n.success) throw errors.validation([{ field: 'name', message: n.error.issues[0]!.message, in: 'path' }])
      const r = EventTypePut.safeParse(input ?? {})
      if (!r.success) throw errors.validation(r.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })))
      const i = r.data
      const schema = (i.schema ?? null) as EventTypeRow['schema']
      const example = (i.example ?? null) as EventTypeRow['example']
      if (schema !== null) await checkSchema(schema, example)
      const row = await store.tx((s) =>
        s.eventTypes.put({ name, description: i.description ?? '', schema, example, deprecated: i.deprecated ?? false, archived: i.archived ?? false }, clock.now()),
      )
      return out(row)
    },
    get: async (name, opts = {}) => out(await readable(name, opts.includeArchived ?? false)),
    async list(opts = {}) {
      if (opts.cursor && !isEventTypeCursor(opts.cursor)) throw errors.validation([{ field: 'cursor', message: 'is not a cursor returned by this list', in: 'query' }])
      const page = await store.eventTypes.list({ limit: pageSize(opts.limit), cursor: opts.cursor ?? null, includeArchived: opts.includeArchived ?? false })
      return { data: page.data.map(out), next_cursor: page.next_cursor }
    },
    async check(type, data, appId = 'default') {
      await refresh()
      const [err] = await checkAll([{ type, data, appId }])
      if (err) throw err
    },
    refresh,
    checkAll,
    async subscriptionIssues(patterns) {
      if (config.eventTypes !== 'strict' || !patterns) return []
      await refresh()
      const known = types
      return patterns
        .map((p, n) => ({ p, n }))
        .filter(({ p }) => !p.includes('*') && !RESERVED.test(p) && !known.has(p))
        .map(({ p, n }) => ({ path: `event_types.${n}`, message: `${p} is not in the event-type catalog (POSTBOX_EVENT_TYPES=strict): name a catalog type or a wildcard` }))
    },
    async exampleFor(name) {
      const t = await store.eventTypes.get(name)
      if (!t) throw errors.notFound('Event type')
      if (t.archived) throw new AppError('event_type_archived', 400, `Event type ${name} is archived`)
      if (t.example === null) throw errors.validation([{ path: 'event_type', message: `${name} has no example to send; add one with PUT /v1/event-types/${name}` }])
      return t.example
    },
  }
}
