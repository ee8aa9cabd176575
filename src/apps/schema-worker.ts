/**
 * The schema-validation worker (see schema-pool.ts): compiles catalog schemas and validates event
 * data against them off the main thread, under the pool's deadline and memory limit. It imports
 * only Node built-ins and schema-engine.ts, and loads the packages from the path the parent
 * passes, so the same module runs from dist/ and, transpiled, from a data: URL under the test
 * runner.
 */
import { createRequire } from 'node:module'
import { parentPort, workerData } from 'node:worker_threads'
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js'
import { newAjv, type Ajv2020 } from './schema-engine.js'

/** What the parent passes in `workerData`: a file to resolve the packages from. */
export interface SchemaWorkerData {
  base: string
}

/** A job: validate `items` against the schema `key` (sent with `schema` when this worker may not have it). */
export interface SchemaJob {
  id: number
  key: string
  schema?: unknown
  /** False for a one-off schema (a PUT): compiled, used, not kept. */
  cache: boolean
  items: unknown[]
  /** At most this many errors are sent back per item. */
  maxErrors: number
  /** When RE2 refuses a pattern, compile with the backtracking RegExp instead (a schema stored before the limits). */
  legacyRegExp: boolean
}

/** One item's outcome: valid, or Ajv's errors (the first `maxErrors`). */
export type SchemaItemResult = null | Partial<ErrorObject>[]

/** A message from the worker: ready once Ajv is loaded, then one answer per job. */
export type SchemaWorkerMessage =
  | { ready: true }
  | { id: number; results: SchemaItemResult[] }
  | { id: number; compileError: string }
  /** The job named a schema this worker no longer has, without sending it: send it again with the schema. */
  | { id: number; unknownKey: true }
  /** Validation overflowed the stack (data nested deeper than the schema's recursion can follow). */
  | { id: number; overflow: true }

/** Compiled validators kept, at most: the catalog is small, and a new version replaces the old. */
const MAX_CACHED = 512

const port = parentPort!
const req = createRequire((workerData as SchemaWorkerData).base)
const ajv = newAjv(req)
let legacy: Ajv2020 | null = null

/** Compiles with RE2, or with the backtracking RegExp for a job that allows it when RE2 refuses a pattern. */
function compile(job: SchemaJob): ValidateFunction {
  try {
    return ajv.compile(job.schema as object)
  } catch (err) {
    if (!job.legacyRegExp) throw err
    return (legacy ??= newAjv(req, { re2: false })).compile(job.schema as object)
  } finally {
    // The validator keeps what it needs; Ajv's own cache (by schema object) would only grow.
    ajv.removeSchema(job.schema as object)
    legacy?.removeSchema(job.schema as object)
  }
}
const cache = new Map<string, ValidateFunction>()

/** Ajv's errors without the parts that do not clone or are not needed (schema, data). */
const slim = (errs: readonly ErrorObject[] | null | undefined, max: number): Partial<ErrorObject>[] =>
  (errs ?? []).slice(0, max).map((e) => ({ keyword: e.keyword, instancePath: e.instancePath, params: e.params, ...(e.message !== undefined ? { message: e.message } : {}) }))

port.on('message', (job: SchemaJob) => {
  let validate = cache.get(job.key)
  if (!validate) {
    if (job.schema === undefined) {
      port.postMessage({ id: job.id, unknownKey: true } satisfies SchemaWorkerMessage)
      return
    }
    try {
      validate = compile(job)
    } catch (err) {
      port.postMessage({ id: job.id, compileError: (err as Error).message } satisfies SchemaWorkerMessage)
      return
    }
    if (job.cache) {
      if (cache.size >= MAX_CACHED) cache.clear()
      cache.set(job.key, validate)
    }
  }
  let results: SchemaItemResult[]
  try {
    results = job.items.map((item): SchemaItemResult => (validate(item) ? null : slim(validate.errors, job.maxErrors)))
  } catch (err) {
    // Ajv's validators throw only when the stack runs out; anything else is a bug to surface.
    if (!(err instanceof RangeError)) throw err
    port.postMessage({ id: job.id, overflow: true } satisfies SchemaWorkerMessage)
    return
  }
  port.postMessage({ id: job.id, results } satisfies SchemaWorkerMessage)
})
// Warm the compiler and the keywords most schemas use before the first deadline starts: a cold
// first compile is tens of times slower than the next.
const warm = { $defs: { id: { type: 'string', pattern: '^[a-z]+$' } }, type: 'object', properties: { id: { $ref: '#/$defs/id' }, at: { type: 'string', format: 'date-time' }, n: { type: 'integer', minimum: 0 }, tags: { type: 'array', uniqueItems: true, items: { enum: ['a', 'b'] } } }, required: ['id'] }
ajv.compile(warm)({ id: 'abc', at: '2026-01-01T00:00:00Z', n: 1, tags: ['a', 'b'] })
ajv.removeSchema(warm)
port.postMessage({ ready: true } satisfies SchemaWorkerMessage)
