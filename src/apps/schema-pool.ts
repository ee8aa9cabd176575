import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { AppError } from '../errors.js'
import type { SchemaItemResult, SchemaJob, SchemaWorkerData, SchemaWorkerMessage } from './schema-worker.js'

/**
 * The schema-validation workers (docs/applications.md, "Schema limits"): a schema that is not
 * provably cheap is compiled and run in a worker thread with a deadline and a heap limit. A job
 * over its deadline or its heap has its worker terminated (a new one is started for the next
 * job) and answers 422, so no schema and no data can stall the event loop or exhaust the
 * process's memory. One process-wide pool, started at the first job: an idle server, or one
 * whose catalog needs no worker, never starts a thread.
 */

/** The pool's limits (docs/applications.md, "Schema limits"). */
export const VALIDATION_LIMITS: { workers: number; timeoutMs: number; heapMb: number; maxQueued: number; idleMs: number } = {
  /** Workers at most. One application's jobs take one at a time, so one tenant never holds them all. */
  workers: 2,
  /** A job's deadline, from when its worker takes it (wall time: a loaded machine needs the margin). */
  timeoutMs: 2_000,
  /** A worker's old-generation heap, in MB (resourceLimits). */
  heapMb: 64,
  /** Jobs waiting for a worker, at most; past it, 503 `unavailable`. */
  maxQueued: 256,
  /** An idle worker ends after this long. */
  idleMs: 60_000,
}

/** Changes the limits of workers started and jobs run from now on (tests, and hosts that embed the library). */
export function setValidationLimits(limits: Partial<typeof VALIDATION_LIMITS>): void {
  Object.assign(VALIDATION_LIMITS, limits)
}

/** One job for the pool: `items` against the schema known as `key` (unique per compiled schema). */
export interface PoolJob {
  key: string
  schema: unknown
  items: unknown[]
  /** Whose job it is (the application): jobs of one tenant run one at a time. */
  tenant: string
  /** False for a one-off schema (a PUT). */
  cache: boolean
  maxErrors: number
  /** True at ingest: a stored schema whose patterns RE2 refuses runs with the backtracking RegExp (bounded by the deadline). */
  legacyRegExp: boolean
}

/** A job's outcome: one result per item, or the schema's compile error. */
export type PoolResult = { results: SchemaItemResult[] } | { compileError: string }

interface Pending {
  job: PoolJob
  id: number
  resolve: (r: PoolResult) => void
  reject: (err: unknown) => void
}

interface Slot {
  worker: Worker
  ready: boolean
  known: Set<string>
  current: Pending | null
  timer: NodeJS.Timeout | null
  idle: NodeJS.Timeout | null
}

/** Data URLs of the transpiled engine and worker, when this file runs as TypeScript source (the test runner). */
function workerUrl(): URL {
  if (!import.meta.url.endsWith('.ts')) return new URL('./schema-worker.js', import.meta.url)
  type Ts = typeof import('typescript')
  const ts = createRequire(import.meta.url)('typescript') as Ts
  const js = (file: string) =>
    ts.transpileModule(readFileSync(new URL(file, import.meta.url), 'utf8'), { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } }).outputText
  const dataUrl = (code: string) => `data:text/javascript;base64,${Buffer.from(code).toString('base64')}`
  return new URL(dataUrl(js('./schema-worker.ts').replace("'./schema-engine.js'", `'${dataUrl(js('./schema-engine.ts'))}'`)))
}

/** The 422 of a job that ran out of time or memory. */
function overrun(kind: 'time' | 'memory'): AppError {
  return kind === 'time'
    ? new AppError('schema_validation_timeout', 422, `Validating the data against the event type's schema took longer than ${String(VALIDATION_LIMITS.timeoutMs)} ms and was stopped`, { limit_ms: VALIDATION_LIMITS.timeoutMs })
    : new AppError('schema_validation_out_of_memory', 422, `Validating the data against the event type's schema needed more than its ${String(VALIDATION_LIMITS.heapMb)} MB heap (or its stack) and was stopped`, { limit_mb: VALIDATION_LIMITS.heapMb })
}

/** The process-wide pool of schema-validation workers. */
export interface ValidatorPool {
  run(job: PoolJob): Promise<PoolResult>
  /** Jobs a worker is running now (tests observe a job in flight). */
  running(): number
  /** Workers started and ready for a job. */
  ready(): number
}

/** Creates a pool (the process has one: `validatorPool()`). */
export function createValidatorPool(): ValidatorPool {
  let url: URL | null = null
  const slots = new Set<Slot>()
  const queue: Pending[] = []
  const busyTenants = new Set<string>()
  let nextId = 1

  const finish = (slot: Slot): Pending | null => {
    const p = slot.current
    if (slot.timer) clearTimeout(slot.timer)
    slot.timer = null
    slot.current = null
    if (p) busyTenants.delete(p.job.tenant)
    return p
  }

  /** Terminates a worker; its job, if any, fails with `err`. */
  const end = (slot: Slot, err: AppError | null): void => {
    if (!slots.delete(slot)) return
    if (slot.idle) clearTimeout(slot.idle)
    const p = finish(slot)
    if (p) p.reject(err ?? overrun('memory'))
    void slot.worker.terminate()
    dispatch()
  }

  const post = (slot: Slot, p: Pending, withSchema: boolean): void => {
    const { key, schema, items, cache, maxErrors, legacyRegExp } = p.job
    const msg: SchemaJob = { id: p.id, key, cache, items, maxErrors, legacyRegExp, ...(withSchema ? { schema } : {}) }
    slot.worker.postMessage(msg)
    if (withSchema && cache) {
      // The worker keeps at most MAX_CACHED validators and says when it lost one (unknownKey).
      if (slot.known.size >= 4096) slot.known.clear()
      slot.known.add(key)
    }
  }

  const start = (slot: Slot, p: Pending): void => {
    if (slot.idle) clearTimeout(slot.idle)
    slot.idle = null
    slot.current = p
    busyTenants.add(p.job.tenant)
    slot.timer = setTimeout(() => end(slot, overrun('time')), VALIDATION_LIMITS.timeoutMs)
    try {
      post(slot, p, !slot.known.has(p.job.key))
    } catch {
      // Data too deeply nested to copy to the worker (a library caller's: HTTP bodies stop at 64 levels).
      finish(slot)
      p.reject(overrun('memory'))
    }
  }

  const spawn = (): void => {
    const data: SchemaWorkerData = { base: fileURLToPath(import.meta.url) }
    const worker = new Worker((url ??= workerUrl()), {
      workerData: data,
      // Not the parent's flags: `--input-type` (a script run with -e) stops a worker from a file.
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: VALIDATION_LIMITS.heapMb, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
    })
    const slot: Slot = { worker, ready: false, known: new Set(), current: null, timer: null, idle: null }
    slots.add(slot)
    worker.on('message', (m: SchemaWorkerMessage) => {
      if ('ready' in m) {
        slot.ready = true
        return dispatch()
      }
      const p = slot.current
      if (!p || p.id !== m.id) return
      if ('unknownKey' in m) return post(slot, p, true)
      finish(slot)
      if ('overflow' in m) p.reject(overrun('memory'))
      else p.resolve('compileError' in m ? { compileError: m.compileError } : { results: m.results })
      slot.idle = setTimeout(() => end(slot, null), VALIDATION_LIMITS.idleMs).unref()
      dispatch()
    })
    // ERR_WORKER_OUT_OF_MEMORY: the heap limit ended the worker (the process lives on).
    worker.on('error', (err: Error & { code?: string }) => {
      const memory = err.code === 'ERR_WORKER_OUT_OF_MEMORY'
      if (!slot.ready && !memory) {
        // The worker could not start: fail what waits rather than start another forever.
        slots.delete(slot)
        for (const q of queue.splice(0)) q.reject(new AppError('unavailable', 503, `Schema validation is unavailable: ${err.message}`))
        return
      }
      end(slot, overrun('memory'))
    })
    worker.on('exit', () => end(slot, null))
  }

  /** Workers keep the process alive only while jobs run or wait (a library caller's script, too). */
  const hold = (): void => {
    for (const s of slots) {
      if (s.current !== null || queue.length > 0) s.worker.ref()
      else s.worker.unref()
    }
  }

  function dispatch(): void {
    while (queue.length > 0) {
      const n = queue.findIndex((q) => !busyTenants.has(q.job.tenant))
      if (n < 0) break
      const free = [...slots].find((s) => s.ready && s.current === null)
      if (!free) {
        if ([...slots].filter((s) => !s.ready).length === 0 && slots.size < VALIDATION_LIMITS.workers) spawn()
        break
      }
      start(free, queue.splice(n, 1)[0]!)
    }
    hold()
  }

  return {
    run(job) {
      if (queue.length >= VALIDATION_LIMITS.maxQueued) return Promise.reject(new AppError('unavailable', 503, 'Too many schema validations are waiting; nothing was accepted'))
      return new Promise<PoolResult>((resolve, reject) => {
        queue.push({ job, id: nextId++, resolve, reject })
        dispatch()
      })
    },
    running: () => [...slots].filter((s) => s.current !== null).length,
    ready: () => [...slots].filter((s) => s.ready).length,
  }
}

let pool: ValidatorPool | null = null

/** The process's pool, created at the first call. */
export function validatorPool(): ValidatorPool {
  return (pool ??= createValidatorPool())
}
