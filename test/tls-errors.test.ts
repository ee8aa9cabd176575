import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from './helpers.js'
import { apiClient, ensureBuilt, killAllChildren, newAdminKey, ROOT, serverEnv, startServer } from './support/server-process.js'

/**
 * A refused certificate says why in the attempt's error (`tls_error: <reason> (<code>)`), and a
 * private CA is trusted through NODE_EXTRA_CA_CERTS (docs/delivery.md). Real HTTPS receivers on
 * 127.0.0.1 with the certificates of test/fixtures/tls (made by its make.sh), and the real server.
 */
const FIXTURES = join(ROOT, 'test', 'fixtures', 'tls')
const fixture = (name: string): Buffer => readFileSync(join(FIXTURES, name))

const CASES = [
  { cert: 'self-signed.pem', error: 'tls_error: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)' },
  { cert: 'unknown-issuer.pem', error: 'tls_error: unknown issuer (UNABLE_TO_VERIFY_LEAF_SIGNATURE)' },
  { cert: 'expired.pem', error: 'tls_error: certificate expired (CERT_HAS_EXPIRED)' },
  { cert: 'name-mismatch.pem', error: 'tls_error: name mismatch (ERR_TLS_CERT_ALTNAME_INVALID)' },
  { cert: 'ok.pem', error: null },
] as const

describe('TLS failures name their reason', () => {
  const servers: Server[] = []
  const dirs: (() => void)[] = []
  beforeAll(async () => ensureBuilt(), 180_000)
  afterAll(async () => {
    await killAllChildren()
    for (const s of servers) s.close()
    for (const d of dirs) d()
  })

  it('self-signed, unknown issuer, expired and name mismatch each say so; a private CA in NODE_EXTRA_CA_CERTS is trusted', { timeout: 60_000 }, async () => {
    const urls = new Map<string, string>()
    for (const c of CASES) {
      const s = createServer({ key: fixture('leaf.key'), cert: fixture(c.cert) }, (req, res) => {
        req.resume()
        res.writeHead(200).end('ok')
      })
      servers.push(s)
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))
      urls.set(c.cert, `https://127.0.0.1:${(s.address() as AddressInfo).port}/hook`)
    }
    const t = tempDir('postbox-tls-')
    dirs.push(t.cleanup)
    const key = newAdminKey()
    const server = await startServer(serverEnv(t.dir, key, { NODE_EXTRA_CA_CERTS: join(FIXTURES, 'ca.pem') }))
    const call = apiClient(() => server.baseUrl, key)
    const endpoints = new Map<string, string>()
    for (const c of CASES) {
      const res = await call('POST', '/v1/endpoints', { url: urls.get(c.cert), retry_schedule: ['1h'] })
      expect(res.status, res.text).toBe(201)
      endpoints.set(c.cert, res.json.id as string)
    }
    expect((await call('POST', '/v1/events', { type: 'tls.check', data: {} })).status).toBe(202)
    for (const c of CASES) {
      const endpoint = endpoints.get(c.cert)!
      let d: { status: string; attempt_count: number; last_error: string | null } | undefined
      const deadline = Date.now() + 20_000
      for (;;) {
        d = (await call('GET', `/v1/deliveries?endpoint_id=${endpoint}`)).json.data[0]
        if (d !== undefined && d.attempt_count >= 1 && d.status !== 'in_flight') break
        if (Date.now() > deadline) throw new Error(`no attempt to ${c.cert}: ${JSON.stringify(d)}\n${server.output()}`)
        await new Promise((r) => setTimeout(r, 50))
      }
      expect({ cert: c.cert, error: d.last_error }).toEqual({ cert: c.cert, error: c.error })
      expect(d.status).toBe(c.error === null ? 'success' : 'pending')
    }
    expect(await server.stop()).toBe(0)
  })
})
