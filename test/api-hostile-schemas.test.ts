/* eslint-disable @typescript-eslint/no-explicit-any */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { setValidationLimits, VALIDATION_LIMITS, validatorPool } from '../src/apps/schema-pool.js'
import { apiFixture, type ApiFixture } from './support/api.js'
import { refBomb } from './support/hostile-cases.js'

/**
 * Hostile catalog schemas (issue #36, finding 1; docs/applications.md, "Schema limits"): each
 * reproduction answers a 4xx with a stable code, and while a hostile event is in a validation
 * worker, /healthz and another application's events are answered. Runs on both backends.
 */


/** `{x: {x: … "s" …}}`, `depth` levels: a string at the bottom matches no branch, so every branch is tried. */
function deepEvent(depth: number): unknown {
  let v: unknown = 's'
  for (let i = 0; i < depth; i++) v = { x: v, y: 1 }
  return v
}

/** A recursive tree schema: legitimate, bounded by the data's depth, validated in a worker. */
const TREE = { $defs: { node: { type: 'object', properties: { name: { type: 'string' }, kids: { type: 'array', items: { $ref: '#/$defs/node' } } } } }, $ref: '#/$defs/node' }

let f: ApiFixture
const limits = { ...VALIDATION_LIMITS }
beforeAll(async () => {
  // A deadline far above what the other requests need while the hostile job holds its worker.
  setValidationLimits({ timeoutMs: 5_000 })
  f = await apiFixture()
  for (const id of ['tenant_a', 'tenant_b']) expect((await f.json('POST', '/v1/apps', { body: { id, name: id } })).status).toBe(201)
  expect((await f.json('PUT', '/v1/event-types/tree.changed', { body: { schema: TREE, example: { name: 'root', kids: [{ name: 'leaf' }] } } })).status).toBe(200)
})
afterAll(async () => {
  setValidationLimits(limits)
  await f?.close()
})

/** Waits, by state, until `cond` holds (one event-loop turn at a time). */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setImmediate(r))
}

describe('hostile schemas at PUT', () => {
  const rows: [string, unknown, RegExp][] = [
    ['the anyOf-of-refs schema, 21 levels (2.7 KB)', refBomb(21), /applies more than 10000 schemas/],
    ['the anyOf-of-refs schema, 40 levels', refBomb(40), /applies more than 10000 schemas/],
    ['a $ref cycle that never descends into the data', { $defs: { a: { anyOf: [{ $ref: '#/$defs/a' }] } }, $ref: '#/$defs/a' }, /infinite recursion/],
    ['a lookahead (the pattern engine does not backtrack)', { type: 'string', pattern: '^(?=a)a+$' }, /does not compile/],
    ['a backreference in patternProperties', { type: 'object', patternProperties: { '^(a+)\\1$': true } }, /does not compile/],
    ['a schema over 64 KiB', { type: 'object', description: 'x'.repeat(70_000) }, /bytes of JSON/],
  ]
  it.each(rows)('%s: 400 validation_failed', async (_name, schema, message) => {
    const r = await f.json('PUT', '/v1/event-types/hostile.put', { body: { schema } })
    expect(r.status).toBe(400)
    expect(r.body.error.code).toBe('validation_failed')
    expect(JSON.stringify(r.body.error.details)).toMatch(message)
    expect((await f.json('GET', '/v1/event-types/hostile.put')).status).toBe(404)
  })
})

describe('hostile events', () => {
  it('"^(a+)+$" against "a"×32 + "!" is a plain 400 (RE2, linear), in properties and patternProperties', async () => {
    const schema = { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } }, patternProperties: { '^(b+)+$': { type: 'integer' } } }
    expect((await f.json('PUT', '/v1/event-types/evil.pattern', { body: { schema } })).status).toBe(200)
    const bad = await f.json('POST', '/v1/events', { body: { type: 'evil.pattern', data: { s: `${'a'.repeat(32)}!` } } })
    expect(bad.status).toBe(400)
    expect(bad.body.error.code).toBe('validation_failed')
    expect(bad.body.error.details).toEqual([{ field: 'data', pointer: '/s', in: 'body', keyword: 'pattern', message: 'must match pattern "^(a+)+$"' }])
    const long = await f.json('POST', '/v1/events', { body: { type: 'evil.pattern', data: { s: `${'a'.repeat(50_000)}!`, [`${'b'.repeat(5_000)}`]: 'x' } } })
    expect(long.status).toBe(400)
    expect(long.body.error.details.map((d: any) => d.keyword).sort()).toEqual(['pattern', 'type'])
    expect((await f.json('POST', '/v1/events', { body: { type: 'evil.pattern', data: { s: 'a'.repeat(32) } } })).status).toBe(202)
  })

  it('uniqueItems on an untyped array of 20,000 objects answers (linear check in a worker)', async () => {
    const items = Array.from({ length: 20_000 }, (_, i) => ({ n: i }))
    const wrapped = { type: 'object', properties: { list: { type: 'array', uniqueItems: true } } }
    expect((await f.json('PUT', '/v1/event-types/evil.unique', { body: { schema: wrapped } })).status).toBe(200)
    expect((await f.json('POST', '/v1/events', { body: { type: 'evil.unique', data: { list: items } } })).status).toBe(202)
    const dup = await f.json('POST', '/v1/events', { body: { type: 'evil.unique', data: { list: [...items, { n: 7 }] } } })
    expect(dup.status).toBe(400)
    expect(dup.body.error.details).toEqual([{ field: 'data', pointer: '/list', in: 'body', keyword: 'uniqueItems', message: 'must NOT have duplicate items (items ## 7 and 20000 are identical)' }])
  })

  it('a stored anyOf-of-refs schema (from before the limits) is stopped in its worker: 422, while /healthz and another application are answered', async () => {
    // The catalog may hold a schema stored before the limits: put it in the store directly.
    await f.pb.store.tx((s) => s.eventTypes.put({ name: 'evil.refs', description: '', schema: refBomb(40) as any, example: null, deprecated: false, archived: false }, Date.now()))
    // Both workers started: two applications' tree events at once, until the second worker is ready.
    while (validatorPool().ready() < 2) {
      const warm = await Promise.all(['tenant_a', 'tenant_b'].map((app_id) => f.json('POST', '/v1/events', { body: { type: 'tree.changed', app_id, data: { name: 'r', kids: [] } } })))
      expect(warm.map((r) => r.status)).toEqual([202, 202])
    }
    const heapBefore = process.memoryUsage().heapUsed
    let settled = false
    const hostile = f.json('POST', '/v1/events', { body: { type: 'evil.refs', app_id: 'tenant_a', data: deepEvent(60) } }).finally(() => (settled = true))
    await until(() => validatorPool().running() === 1)
    // The hostile event is in a worker: the event loop and the other workers are free.
    expect((await f.call('GET', '/healthz', { key: null })).status).toBe(200)
    const other = await f.json('POST', '/v1/events', { body: { type: 'tree.changed', app_id: 'tenant_b', data: { name: 'r', kids: [{ name: 'k', kids: [] }] } } })
    expect(other.status).toBe(202)
    const plain = await f.json('POST', '/v1/events', { body: { type: 'no.schema', app_id: 'tenant_b', data: { a: 1 } } })
    expect(plain.status).toBe(202)
    // Only the deadline ends the hostile job (its work is exponential): it is still running.
    expect(settled).toBe(false)
    expect(validatorPool().running()).toBe(1)
    const r = await hostile
    expect(r.status).toBe(422)
    // Its worker ran out of time or, first, of heap (the 4.6 GB of the report).
    expect(['schema_validation_timeout', 'schema_validation_out_of_memory']).toContain(r.body.error.code)
    // The process lives, its heap did not take the blowup, and the next event gets a fresh worker.
    expect((await f.call('GET', '/healthz', { key: null })).status).toBe(200)
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(64 * 1024 * 1024)
    expect((await f.json('POST', '/v1/events', { body: { type: 'tree.changed', app_id: 'tenant_a', data: { name: 'again' } } })).status).toBe(202)
    // In a batch only that item fails, with the same code.
    const batch = await f.json('POST', '/v1/events/batch', { body: { events: [{ type: 'evil.refs', data: deepEvent(60) }, { type: 'no.schema', data: {} }] } })
    expect(batch.status).toBe(202)
    expect(['schema_validation_timeout', 'schema_validation_out_of_memory']).toContain(batch.body.results[0].error.code)
    expect(batch.body.results[1].id).toMatch(/^evt_/)
  })
})

describe('memory', () => {
  it('an event whose violations would fill the heap is stopped in its worker: 422 schema_validation_out_of_memory', async () => {
    // 50 failing keywords × 20,000 items: a million error objects, past the worker's 64 MB heap.
    const schema = { type: 'object', properties: { list: { type: 'array', items: { allOf: Array.from({ length: 50 }, (_, i) => ({ type: 'string', minLength: i })) } } } }
    expect((await f.json('PUT', '/v1/event-types/evil.errors', { body: { schema } })).status).toBe(200)
    setValidationLimits({ timeoutMs: 60_000 })
    try {
      const heapBefore = process.memoryUsage().heapUsed
      const r = await f.json('POST', '/v1/events', { body: { type: 'evil.errors', data: { list: Array.from({ length: 20_000 }, (_, i) => i) } } })
      expect(r.status).toBe(422)
      expect(r.body.error).toMatchObject({ code: 'schema_validation_out_of_memory', details: { limit_mb: 64 } })
      expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(64 * 1024 * 1024)
      expect((await f.call('GET', '/healthz', { key: null })).status).toBe(200)
    } finally {
      setValidationLimits({ timeoutMs: 5_000 })
    }
  })
})
