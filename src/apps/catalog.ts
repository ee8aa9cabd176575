import { createRequire } from 'node:module'
import type { z } from '@hono/zod-openapi'
import type Ajv2020Module from 'ajv/dist/2020.js'
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js'
import type addFormatsModule from 'ajv-formats'
import type { Config } from '../config.js'
import { AppError, errors } from '../errors.js'
import { toIso, type Clock } from '../lib/clock.js'
import { pageSize, type Page } from '../lib/cursor.js'
import { isEventTypeCursor, type EventTypeRow } from '../store/event-types.js'
import type { Store } from '../store/index.js'
import { EventTypeName, EventTypePut, type EventTypeOut } from './catalog-schemas.js'

type Ajv2020 = InstanceType<typeof Ajv2020Module.default>

/**
 * A new Ajv (draft 2020-12, standard formats). ajv and ajv-formats are CommonJS, required on the
 * first schema compiled: an idle server, or one whose catalog has no schema, never loads them
 * (docs/performance.md).
 */
function newAjv(): Ajv2020 {
  const require = createRequire(import.meta.url)
  const Ajv = (require('ajv/dist/2020.js') as typeof Ajv2020Module).default
  const addFormats = (require('ajv-formats') as typeof addFormatsModule).default
  // allErrors: every violation is reported; strict off: unknown keywords (`examples`, vendor
  // extensions) are annotations, as the 2020-12 specification says; addUsedSchema off: a
  // schema's $id is not registered, so two types (or two versions) may share one.
  const ajv = new Ajv({ allErrors: true, strict: false, addUsedSchema: false, logger: false })
  addFormats(ajv)
  return ajv
}

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

/** The event-type catalog: its routes' service, and the check every ingested event goes through. */
export interface Catalog {
  put(name: string, input: EventTypePutInput): Promise<EventTypeOutput>
  get(name: string, opts?: { includeArchived?: boolean }): Promise<EventTypeOutput>
  list(opts?: { limit?: number; cursor?: string | null; includeArchived?: boolean }): Promise<Page<EventTypeOutput>>
  /**
   * Checks one event at ingest: 400 `event_type_archived`, `unknown_event_type` (strict mode), or
   * `validation_failed` with one detail per violation by JSON pointer (`refresh`, then `checkLoaded`).
   */
  check(type: string, data: unknown): Promise<void>
  /**
   * Reloads the in-memory catalog when the stored one changed (one version read). Ingest calls it
   * once per request or batch, outside any transaction, then `checkLoaded` per event.
   */
  refresh(): Promise<void>
  /**
   * `check` against the catalog as the last `refresh` loaded it: a Map lookup and the compiled
   * validator, no store call.
   */
  checkLoaded(type: string, data: unknown): void
  /** Issues with an endpoint's `event_types` in strict mode: every exact type must be in the catalog. */
  subscriptionIssues(patterns: readonly string[] | null | undefined): Promise<{ path: string; message: string }[]>
  /** The example of a type for the endpoint test; 404 when unknown, 400 when archived or without an example. */
  exampleFor(name: string): Promise<Record<string, unknown>>
}

/** The pointer a violation names: for a missing or extra property, the property itself. */
function pointerOf(e: ErrorObject): string {
  const p = e.params as { missingProperty?: string; additionalProperty?: string; unevaluatedProperty?: string }
  const prop = p.missingProperty ?? p.additionalProperty ?? p.unevaluatedProperty
  const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1')
  return prop === undefined ? e.instancePath : `${e.instancePath}/${escape(prop)}`
}

/** Ajv's errors as `validation_failed` details. */
export function schemaIssues(errs: readonly ErrorObject[] | null | undefined): SchemaIssue[] {
  return (errs ?? []).slice(0, MAX_DETAILS).map((e) => ({ field: 'data', pointer: pointerOf(e), message: e.message ?? 'is invalid', keyword: e.keyword }))
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
 * once per (type, version) and cached; a PUT compiles the new version first, so a schema that
 * does not compile is refused (400) and never reaches ingest.
 */
export function createCatalog(deps: { store: Store; config: Pick<Config, 'eventTypes'>; clock: Clock }): Catalog {
  const { store, config, clock } = deps
  let ajv: Ajv2020 | null = null
  const compiled = new Map<string, { version: number; validate: ValidateFunction }>()
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

  const checkLoaded = (type: string, data: unknown): void => {
    const t = types.get(type)
    if (!t) {
      if (config.eventTypes === 'strict' && !RESERVED.test(type)) {
        throw new AppError('unknown_event_type', 400, `Event type ${type} is not in the catalog (POSTBOX_EVENT_TYPES=strict); add it with PUT /v1/event-types/${type}`)
      }
      return
    }
    if (t.archived) throw new AppError('event_type_archived', 400, `Event type ${type} is archived and no longer accepted`)
    const validate = validatorFor(t)
    if (validate && !validate(data)) throw errors.validation(schemaIssues(validate.errors), `The data does not match the schema of event type ${type}`)
  }

  const compile = (schema: EventTypeRow['schema']): ValidateFunction => {
    try {
      return (ajv ??= newAjv()).compile(schema as object | boolean as object)
    } catch (err) {
      throw errors.validation([{ path: 'schema', message: `does not compile as a JSON Schema (draft 2020-12): ${(err as Error).message}` }])
    }
  }

  const validatorFor = (t: EventTypeRow): ValidateFunction | null => {
    if (t.schema === null) return null
    const hit = compiled.get(t.name)
    if (hit && hit.version === t.version) return hit.validate
    const validate = compile(t.schema)
    compiled.set(t.name, { version: t.version, validate })
    return validate
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
      if (schema !== null) {
        const validate = compile(schema)
        if (example !== null && !validate(example)) {
          throw errors.validation(schemaIssues(validate.errors).map((e) => ({ ...e, field: 'example' })), 'The example does not satisfy the schema')
        }
      }
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
    async check(type, data) {
      await refresh()
      checkLoaded(type, data)
    },
    refresh,
    checkLoaded,
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
