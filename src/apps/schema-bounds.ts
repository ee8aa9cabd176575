/**
 * What a catalog schema may cost, decided before it is compiled (docs/applications.md, "Schema
 * limits"). A schema is refused at `PUT` when it is too large, when following its `$ref`s applies
 * too many schemas to one place of the data (the anyOf-of-refs blowup: each level naming the one
 * below twice or more doubles the work), or when a `$ref` cycle comes back to the same place of
 * the data without descending into it (infinite recursion). Of the rest, a schema is `light` when
 * its cost is provably small (no recursion, few schemas after `$ref`s are followed): with small
 * data (`isSmallData`) it is validated on the main thread, everything else in the worker.
 */

/** The limits of a catalog schema and of main-thread validation. */
export const SCHEMA_LIMITS = {
  /** The schema's JSON, in bytes (UTF-16 code units). */
  maxBytes: 64 * 1024,
  /** Schemas applied to one place of the data with every `$ref` followed (recursion counted once). */
  maxExpansion: 10_000,
  /** Characters of one `pattern` or `patternProperties` key. */
  maxPatternLength: 1_000,
  /** Subschemas nested in one another, `$ref`s followed. */
  maxNesting: 200,
  /** A light schema applies at most this many schemas per place of the data. */
  lightExpansion: 256,
  /** Data validated on the main thread: at most this many units (one per value, key and string character). */
  lightDataUnits: 4_096,
} as const

/** One reason a schema is refused, as a `validation_failed` detail. */
export interface SchemaBoundIssue {
  path: string
  message: string
}

/** The verdict on a schema: refusals (empty when accepted) and whether it is light. */
export interface SchemaAssessment {
  issues: SchemaBoundIssue[]
  /** True when validation is provably cheap (bounded by `lightExpansion` × the data's size). */
  light: boolean
  /** Schemas applied per place of the data, `$ref`s followed (capped just past the limit). */
  expansion: number
}

type Json = unknown
type Obj = Record<string, Json>

/** Keywords whose subschema applies to the same place of the data. */
const SAME_ONE = ['not', 'if', 'then', 'else']
const SAME_LIST = ['allOf', 'anyOf', 'oneOf']
const SAME_MAP = ['dependentSchemas']
/** Keywords whose subschemas apply to a part of the data (one level down). */
const DOWN_ONE = ['additionalProperties', 'items', 'contains', 'propertyNames', 'unevaluatedItems', 'unevaluatedProperties', 'additionalItems']
const DOWN_LIST = ['prefixItems']
const DOWN_MAP = ['properties', 'patternProperties']

const isObj = (v: Json): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The value at a JSON pointer fragment (`#/a/b`) of `root`, or undefined. */
function resolvePointer(root: Json, fragment: string): Json {
  let node: Json = root
  if (fragment === '' || fragment === '/') return fragment === '' ? root : isObj(root) ? root[''] : undefined
  if (!fragment.startsWith('/')) return undefined
  for (const raw of fragment.slice(1).split('/')) {
    let part: string
    try {
      part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~')
    } catch {
      return undefined
    }
    if (Array.isArray(node)) node = /^\d+$/.test(part) ? node[Number(part)] : undefined
    else if (isObj(node)) node = Object.prototype.hasOwnProperty.call(node, part) ? node[part] : undefined
    else return undefined
  }
  return node
}

/** Every `$anchor` of the document, by name. */
function anchors(root: Json): Map<string, Json> {
  const found = new Map<string, Json>()
  const stack: Json[] = [root]
  while (stack.length > 0) {
    const n = stack.pop()
    if (Array.isArray(n)) stack.push(...(n as Json[]))
    else if (isObj(n)) {
      if (typeof n.$anchor === 'string') found.set(n.$anchor, n)
      stack.push(...Object.values(n))
    }
  }
  return found
}

/** The weight of an `enum` or `const`: one per member and per 64 bytes of its JSON (what comparing a value with it costs). */
const valueWeight = (v: Json): number => 1 + (Array.isArray(v) ? v.length : 0) + Math.floor((JSON.stringify(v) ?? '').length / 64)

/**
 * Assesses a schema: refuses what can explode, and says whether the rest is light. Its own cost
 * is bounded: the walk stops once `maxExpansion` schemas have been counted.
 */
export function assessSchema(schema: Json): SchemaAssessment {
  const issues: SchemaBoundIssue[] = []
  let bytes: number
  try {
    bytes = (JSON.stringify(schema) ?? '').length
  } catch {
    // Only a library caller's schema can be nested deep enough to overflow the stack here.
    return { issues: [{ path: 'schema', message: 'is nested too deeply' }], light: false, expansion: 0 }
  }
  if (bytes > SCHEMA_LIMITS.maxBytes) {
    return { issues: [{ path: 'schema', message: `is ${bytes} bytes of JSON; a schema may have at most ${SCHEMA_LIMITS.maxBytes}` }], light: false, expansion: 0 }
  }
  const byAnchor = anchors(schema)
  const weights = new WeakMap<object, number>()
  /** The `$ref` targets being expanded, with the data depth at which each was entered. */
  const onStack = new Map<Json, number>()
  let count = 0
  let heavy = false
  let over = false

  const refTarget = (ref: string): Json => {
    if (!ref.startsWith('#')) return undefined
    const frag = ref.slice(1)
    return frag.startsWith('/') || frag === '' ? resolvePointer(schema, frag) : byAnchor.get(frag)
  }

  /** Where the walk is, as segments (joined only for an issue: a path string per visit would cost more than the walk). */
  const at: string[] = ['schema']
  const here = (...more: string[]): string => [...at, ...more].join('.')

  const child = (node: Json, seg: string, depth: number): void => {
    at.push(seg)
    visit(node, depth)
    at.pop()
  }

  const visit = (node: Json, depth: number): void => {
    if (over) return
    count += 1
    if (count > SCHEMA_LIMITS.maxExpansion) {
      over = true
      issues.push({ path: here(), message: `applies more than ${SCHEMA_LIMITS.maxExpansion} schemas to one place of the data once its $refs are followed (each level of $ref naming the one below more than once multiplies the work); simplify it` })
      return
    }
    if (!isObj(node)) return
    if (at.length > SCHEMA_LIMITS.maxNesting) {
      over = true
      issues.push({ path: 'schema', message: `nests more than ${SCHEMA_LIMITS.maxNesting} subschemas in one another ($refs followed)` })
      return
    }
    for (const k of ['enum', 'const']) {
      if (!(k in node)) continue
      let w = weights.get(node)
      if (w === undefined) weights.set(node, (w = valueWeight(node[k])))
      count += w - 1
    }
    const p = node.pattern
    if (typeof p === 'string' && p.length > SCHEMA_LIMITS.maxPatternLength) issues.push({ path: here('pattern'), message: `is longer than ${SCHEMA_LIMITS.maxPatternLength} characters` })
    if (isObj(node.patternProperties)) {
      for (const k of Object.keys(node.patternProperties)) {
        if (k.length > SCHEMA_LIMITS.maxPatternLength) issues.push({ path: here('patternProperties'), message: `has a pattern longer than ${SCHEMA_LIMITS.maxPatternLength} characters` })
      }
    }
    if ('$dynamicRef' in node || '$recursiveRef' in node) heavy = true
    if (typeof node.$ref === 'string') followRef(node.$ref, depth)
    for (const k of SAME_ONE) if (k in node) child(node[k], k, depth)
    for (const k of DOWN_ONE) if (k in node) child(node[k], k, depth + 1)
    for (const [list, down] of [[SAME_LIST, 0], [DOWN_LIST, 1]] as const) {
      for (const k of list) {
        const v = node[k]
        if (Array.isArray(v)) v.forEach((s, n) => child(s, `${k}.${n}`, depth + down))
      }
    }
    for (const [map, down] of [[SAME_MAP, 0], [DOWN_MAP, 1]] as const) {
      for (const k of map) {
        const v = node[k]
        if (isObj(v)) for (const [name, s] of Object.entries(v)) child(s, `${k}.${name}`, depth + down)
      }
    }
  }

  const followRef = (ref: string, depth: number): void => {
    const target = refTarget(ref)
    // A remote $ref, or one relative to an embedded $id: Ajv compiles it or refuses it; the
    // worker bounds what it costs.
    if (target === undefined) {
      heavy = true
      return
    }
    const entered = onStack.get(target)
    if (entered === depth) {
      issues.push({ path: here('$ref'), message: `${ref} refers back to itself at the same place of the data (infinite recursion)` })
      over = true
      return
    }
    if (entered !== undefined) {
      // Recursion through the data (a tree): bounded by the data's depth, validated in the worker.
      heavy = true
      return
    }
    onStack.set(target, depth)
    child(target, '$ref', depth)
    onStack.delete(target)
  }

  visit(schema, 0)
  return { issues, light: issues.length === 0 && !heavy && count <= SCHEMA_LIMITS.lightExpansion, expansion: count }
}

/**
 * True when `data` has at most `limit` units (one per value and key, plus string lengths) and is
 * at most 64 levels deep: with a light schema, validating it is cheap. Stops at the limit.
 */
export function isSmallData(data: unknown, limit: number = SCHEMA_LIMITS.lightDataUnits): boolean {
  let budget = limit
  const walk = (v: unknown, depth: number): boolean => {
    budget -= 1
    if (typeof v === 'string') budget -= v.length
    else if (typeof v === 'object' && v !== null) {
      if (depth >= 64) return false
      if (Array.isArray(v)) {
        if (v.length > budget) return false
        for (const x of v) if (!walk(x, depth + 1)) return false
      } else {
        const o = v as Record<string, unknown>
        for (const k of Object.keys(o)) {
          budget -= 1 + k.length
          if (!walk(o[k], depth + 1)) return false
        }
      }
    }
    return budget >= 0
  }
  return walk(data, 0)
}
