import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createConfig, lintFromString } from '@redocly/openapi-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'

const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { version: string }

let f: ApiFixture
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the document is probed loosely
let doc: any
beforeAll(async () => {
  f = await apiFixture()
  doc = (await f.json('GET', '/openapi.json')).body
})
afterAll(async () => {
  await f.close()
})

describe('the OpenAPI document', () => {
  it('passes the Redocly linter (recommended ruleset) with no errors or warnings', async () => {
    const config = await createConfig({ extends: ['recommended'] })
    const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: 'openapi.json', config })
    const errors = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? ''}`)
    expect(errors).toEqual([])
  }, 30_000)

  it("has an operationId on every operation, unique, and the package's version", () => {
    const ids: string[] = []
    for (const ops of Object.values(doc.paths) as Record<string, { operationId?: string }>[]) {
      for (const op of Object.values(ops)) ids.push(op.operationId ?? '(missing)')
    }
    expect(ids).not.toContain('(missing)')
    expect(new Set(ids).size).toBe(ids.length)
    expect(doc.info.version).toBe(pkg.version)
    expect(doc.servers.length).toBeGreaterThan(0)
  })

  it('documents the error responses of every operation, and the stream\'s 429', () => {
    for (const [path, ops] of Object.entries(doc.paths) as [string, Record<string, { responses: Record<string, unknown> }>][]) {
      for (const [method, op] of Object.entries(ops)) {
        const codes = Object.keys(op.responses)
        expect([method, path, codes.some((c) => c.startsWith('4') || c.startsWith('5'))]).toEqual([method, path, true])
      }
    }
    expect(Object.keys(doc.paths['/v1/inbox/stream'].get.responses)).toContain('429')
  })
})
