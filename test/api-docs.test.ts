import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'

/** GET /docs (the API reference rendered from /openapi.json) and /favicon.ico. */
describe('/docs and /favicon.ico', () => {
  let f: ApiFixture
  beforeAll(async () => {
    f = await apiFixture()
  })
  afterAll(async () => f.close())

  it('serves a readable reference listing every operation of /openapi.json, within the pages\' policy', async () => {
    const res = await f.call('GET', '/docs', { key: null })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const csp = res.headers.get('content-security-policy') ?? ''
    expect(csp).toContain("default-src 'self'")
    expect(csp).toContain("frame-ancestors 'none'")
    const html = await res.text()
    const doc = (await f.json('GET', '/openapi.json', { key: null })).body as { paths: Record<string, Record<string, { operationId: string }>> }
    const ops = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, id: op.operationId })))
    expect(ops.length).toBeGreaterThan(50)
    for (const op of ops) {
      expect(html, op.id).toContain(`id="${op.id}"`)
      expect(html, op.id).toContain(`<code>${op.path}</code>`)
    }
    expect(html).toContain('<span class="method post">POST</span> <code>/v1/endpoints/{id}/recover</code>')
    expect(html).toContain('id="schema-RecoverIn"')
    // Nothing the policy would block: no script, no inline style, nothing from another origin.
    expect(html).not.toMatch(/<script|style=|<style|(src|href)="?https?:/i)
    expect(html).toContain('<link rel="stylesheet" href="/docs/style.css">')
    const css = await f.call('GET', '/docs/style.css', { key: null })
    expect(css.status).toBe(200)
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8')
  })

  it('serves /favicon.ico: an ICO holding one 32×32 PNG', async () => {
    const res = await f.call('GET', '/favicon.ico', { key: null })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('image/x-icon')
    const ico = Buffer.from(await res.arrayBuffer())
    expect([ico.readUInt16LE(0), ico.readUInt16LE(2), ico.readUInt16LE(4)]).toEqual([0, 1, 1])
    expect([ico[6], ico[7]]).toEqual([32, 32])
    const png = ico.subarray(ico.readUInt32LE(18))
    expect(png.length).toBe(ico.readUInt32LE(14))
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG')
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([32, 32])
  })
})
