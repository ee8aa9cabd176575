/**
 * The Ajv the catalog validates with, on the main thread and in the validation worker
 * (schema-worker.ts). It imports only types and Node built-ins: the packages (ajv, ajv-formats,
 * re2js) come through the `require` the caller passes, so the same module runs from dist/ and,
 * transpiled, from a data: URL under the test runner, and an idle server loads none of them.
 * Two keywords are made linear (docs/applications.md, "Schema limits"): `pattern` and
 * `patternProperties` run on RE2 (re2js, no backtracking), and `uniqueItems` compares
 * canonical JSON strings in a Set instead of every pair of items.
 */
import type Ajv2020Module from 'ajv/dist/2020.js'
import type { ErrorObject } from 'ajv/dist/2020.js'
import type { RegExpEngine, RegExpLike } from 'ajv/dist/types/index.js'
import type addFormatsModule from 'ajv-formats'
import type { RE2JS as RE2JSClass } from 're2js'

/** The Ajv instance type (draft 2020-12). */
export type Ajv2020 = InstanceType<typeof Ajv2020Module.default>

/** The canonical JSON of a value: object keys sorted, so equal JSON values give equal strings. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v
    const o = v as Record<string, unknown>
    const sorted: Record<string, unknown> = {}
    for (const k of Object.keys(o).sort()) sorted[k] = o[k]
    return sorted
  })
}

/**
 * `uniqueItems` in O(n log n): the first duplicate pair `(j, i)`, j < i, by canonical JSON (Ajv's
 * own check compares every pair of items with deep equality, O(n²)); null when all differ.
 */
export function firstDuplicate(items: readonly unknown[]): { i: number; j: number } | null {
  const seen = new Map<string, number>()
  for (let i = 0; i < items.length; i++) {
    const key = canonicalJson(items[i])
    const j = seen.get(key)
    if (j !== undefined) return { i, j }
    seen.set(key, i)
  }
  return null
}

/** A `pattern` compiled by RE2: matches in time linear in the string, never backtracks. */
function re2Engine(RE2JS: typeof RE2JSClass): RegExpEngine {
  const engine = (pattern: string): RegExpLike => {
    const re = RE2JS.compile(RE2JS.translateRegExp(pattern))
    // Ajv keys its compiled patterns by toString(): the source, as a RegExp's would be.
    return { test: (s: string) => re.test(s), toString: () => `/${pattern}/u` } as RegExpLike
  }
  return Object.assign(engine, { code: 'RE2JS' })
}

/**
 * A new Ajv (draft 2020-12, standard formats, RE2 patterns, linear uniqueItems). `req` loads the
 * CommonJS packages (required on first use: an idle server never loads them). `re2: false` keeps
 * JavaScript's backtracking RegExp: only the worker uses it, for schemas stored before the limits.
 */
export function newAjv(req: NodeRequire, opts: { re2?: boolean } = {}): Ajv2020 {
  const Ajv = (req('ajv/dist/2020.js') as typeof Ajv2020Module).default
  const addFormats = (req('ajv-formats') as typeof addFormatsModule).default
  const regExp = opts.re2 === false ? undefined : re2Engine((req('re2js') as { RE2JS: typeof RE2JSClass }).RE2JS)
  // allErrors: every violation is reported; strict off: unknown keywords (`examples`, vendor
  // extensions) are annotations, as the 2020-12 specification says; addUsedSchema off: a
  // schema's $id is not registered, so two types (or two versions) may share one.
  const ajv = new Ajv({ allErrors: true, strict: false, addUsedSchema: false, logger: false, ...(regExp ? { code: { regExp } } : {}) })
  addFormats(ajv)
  ajv.removeKeyword('uniqueItems')
  const unique = (schema: boolean, data: unknown[]): boolean => {
    if (!schema) return true
    const dup = firstDuplicate(data)
    if (!dup) return true
    const err: Partial<ErrorObject> = { keyword: 'uniqueItems', params: dup, message: `must NOT have duplicate items (items ## ${dup.j} and ${dup.i} are identical)` }
    unique.errors = [err]
    return false
  }
  unique.errors = [] as Partial<ErrorObject>[]
  ajv.addKeyword({ keyword: 'uniqueItems', type: 'array', schemaType: 'boolean', errors: true, validate: unique })
  return ajv
}
