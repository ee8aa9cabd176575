import { afterEach, describe, expect, it } from 'vitest'
import { tempStore } from '../../test/helpers.js'
import { systemClock } from '../lib/clock.js'
import { createCatalog } from './catalog.js'
import { assessSchema, isSmallData, SCHEMA_LIMITS } from './schema-bounds.js'
import { canonicalJson, firstDuplicate } from './schema-engine.js'
import { refBomb } from '../../test/support/hostile-cases.js'


const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c()
})

describe('assessSchema', () => {
  it.each(([
    ['a flat object schema', { type: 'object', properties: { id: { type: 'string', format: 'uuid' }, n: { type: 'integer' } }, required: ['id'] }, true],
    ['a schema with a few non-recursive $refs', { $defs: { id: { type: 'string' } }, properties: { a: { $ref: '#/$defs/id' }, b: { $ref: '#/$defs/id' } } }, true],
    ['a recursive tree (bounded by the data, so in a worker)', { $defs: { n: { properties: { kids: { items: { $ref: '#/$defs/n' } } } } }, $ref: '#/$defs/n' }, false],
    ['a $dynamicRef', { $dynamicAnchor: 'x', properties: { a: { $dynamicRef: '#x' } } }, false],
    ['a remote $ref', { $ref: 'https://example.com/s.json' }, false],
    ['a big but linear schema', { properties: Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`p${i}`, { type: 'string' }])) }, false],
  ] as const).map(([name, schema, light]) => ({ name, schema, light })))('accepts $name (light: $light)', ({ schema, light }) => {
    const a = assessSchema(schema)
    expect(a.issues).toEqual([])
    expect(a.light).toBe(light)
  })

  it('refuses the anyOf-of-refs blowup from 8 levels on (the 21-level one of the report is 2.7 KB), in bounded work', () => {
    expect(assessSchema(refBomb(7)).issues).toEqual([])
    expect(JSON.stringify(refBomb(21))).toHaveLength(2705)
    for (const levels of [8, 21, 40, 200]) {
      const a = assessSchema(refBomb(levels))
      expect(a.issues).toHaveLength(1)
      // 200 levels of $ref also nest past the 200 subschemas allowed, found first.
      expect(a.issues[0]!.message).toMatch(levels < 200 ? /more than 10000 schemas/ : /nests more than 200 subschemas/)
      expect(a.expansion).toBeLessThanOrEqual(SCHEMA_LIMITS.maxExpansion + 1)
    }
  })

  it('refuses a $ref cycle that stays at the same place of the data, through anchors and pointers', () => {
    expect(assessSchema({ $ref: '#' }).issues[0]!.message).toMatch(/infinite recursion/)
    expect(assessSchema({ $defs: { a: { $anchor: 'A', allOf: [{ not: { $ref: '#A' } }] } }, $ref: '#/$defs/a' }).issues[0]!.message).toMatch(/infinite recursion/)
  })

  it('refuses schemas nested too deeply, even too deep to serialize', () => {
    let deep: Record<string, unknown> = { type: 'string' }
    for (let i = 0; i < 300; i++) deep = { properties: { a: deep } }
    expect(assessSchema(deep).issues[0]!.message).toMatch(/nests more than 200/)
    let deeper: Record<string, unknown> = {}
    for (let i = 0; i < 200_000; i++) deeper = { not: deeper }
    expect(assessSchema(deeper).issues[0]!.message).toMatch(/nested too deeply/)
  })

  it('refuses oversized schemas and patterns', () => {
    expect(assessSchema({ description: 'x'.repeat(SCHEMA_LIMITS.maxBytes) }).issues[0]!.message).toMatch(/bytes of JSON/)
    expect(assessSchema({ pattern: 'a'.repeat(1001) }).issues[0]!.path).toBe('schema.pattern')
    expect(assessSchema({ patternProperties: { ['b'.repeat(1001)]: true } }).issues[0]!.path).toBe('schema.patternProperties')
  })

  it('counts enum and const by size', () => {
    expect(assessSchema({ enum: Array.from({ length: 300 }, (_, i) => `value-${i}`) }).light).toBe(false)
    expect(assessSchema({ enum: ['a', 'b'] }).light).toBe(true)
  })
})

describe('isSmallData', () => {
  it('counts values, keys and characters, and stops at the limit', () => {
    expect(isSmallData({ a: 'x'.repeat(100), b: [1, 2, 3] })).toBe(true)
    expect(isSmallData({ a: 'x'.repeat(SCHEMA_LIMITS.lightDataUnits) })).toBe(false)
    expect(isSmallData(Array.from({ length: 100_000 }, () => 0))).toBe(false)
    expect(isSmallData({ [`k${'y'.repeat(5000)}`]: 1 })).toBe(false)
  })
})

describe('the linear uniqueItems', () => {
  it('finds the first duplicate by canonical JSON (key order does not matter, 1 and 1.0 are equal)', () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: 1 }] })).toBe(canonicalJson({ a: [{ c: 1, d: 2 }], b: 1 }))
    expect(firstDuplicate([{ a: 1, b: 2 }, 3, { b: 2, a: 1 }])).toEqual({ i: 2, j: 0 })
    expect(firstDuplicate([1, 1.0])).toEqual({ i: 1, j: 0 })
    expect(firstDuplicate([1, '1', [1], { 1: 1 }, null, false, 0])).toBeNull()
  })

  it('reads each item a bounded number of times, not once per pair (catalog check on the main thread)', async () => {
    const { store, cleanup } = tempStore()
    cleanups.push(cleanup)
    const catalog = createCatalog({ store, config: { eventTypes: 'open' }, clock: systemClock })
    await catalog.put('list.unique', { schema: { type: 'object', properties: { list: { type: 'array', uniqueItems: true } } } })
    let reads = 0
    const n = 400
    const list = Array.from({ length: n }, (_, i) => ({
      get v(): number {
        reads++
        return i
      },
    }))
    await catalog.check('list.unique', { list })
    // Ajv's own uniqueItems compares every pair: ~n²/2 = 80,000 reads.
    expect(reads).toBeLessThan(5 * n)
    await expect(catalog.check('list.unique', { list: [...list, { v: 3 }] })).rejects.toMatchObject({ code: 'validation_failed', details: [{ pointer: '/list', keyword: 'uniqueItems' }] })
  })
})

describe('data nested past what validation can follow (library callers: HTTP bodies stop at 64 levels)', () => {
  it('is refused with 422 schema_validation_out_of_memory, never a crash', async () => {
    const { store, cleanup } = tempStore()
    cleanups.push(cleanup)
    const catalog = createCatalog({ store, config: { eventTypes: 'open' }, clock: systemClock })
    await catalog.put('tree', { schema: { $defs: { n: { type: 'object', properties: { k: { $ref: '#/$defs/n' } } } }, $ref: '#/$defs/n' } })
    for (const depth of [50_000, 1_000_000]) {
      let data: Record<string, unknown> = {}
      for (let i = 0; i < depth; i++) data = { k: data }
      await expect(catalog.check('tree', data)).rejects.toMatchObject({ code: 'schema_validation_out_of_memory', status: 422 })
    }
    await catalog.check('tree', { k: { k: {} } })
  })
})
