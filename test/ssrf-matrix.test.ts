/* eslint-disable @typescript-eslint/no-explicit-any */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAddressPolicy, guardedLookup } from '../src/delivery/ssrf.js'
import { tempDir } from './helpers.js'
import { startRecordingReceiver, startRedirectReceiver, type HostileReceiver } from './support/hostile-receivers.js'
import { apiClient, ensureBuilt, killAllChildren, newAdminKey, serverEnv, startServer, type ServerProcess } from './support/server-process.js'

/**
 * docs/delivery.md as a matrix: every non-public range, in every spelling the WHATWG URL parser accepts,
 * is refused at endpoint create; names that resolve to them are refused at connect; redirects
 * towards them are never followed. Nothing ever reaches the local receivers.
 */

/** Blocked literals (the host part of a URL) and what they stand for. */
const BLOCKED: [string, string][] = [
  ['127.0.0.1', 'loopback'], ['127.255.255.254', 'loopback'], ['10.0.0.1', 'RFC 1918'], ['172.16.0.1', 'RFC 1918'],
  ['172.31.255.255', 'RFC 1918'], ['192.168.1.1', 'RFC 1918'], ['169.254.169.254', 'metadata'], ['169.254.0.1', 'link-local'],
  ['100.64.0.1', 'CGNAT'], ['100.127.255.254', 'CGNAT'], ['0.0.0.0', 'unspecified'], ['0.1.2.3', 'this network'],
  ['224.0.0.1', 'multicast'], ['239.255.255.250', 'multicast'], ['255.255.255.255', 'broadcast'], ['240.0.0.1', 'reserved'],
  ['[::1]', 'IPv6 loopback'], ['[::]', 'IPv6 unspecified'], ['[fc00::1]', 'ULA'], ['[fd12:3456::1]', 'ULA'],
  ['[fe80::1]', 'IPv6 link-local'], ['[ff02::1]', 'IPv6 multicast'], ['[ff05::1:3]', 'IPv6 multicast'],
  ['[::ffff:127.0.0.1]', 'IPv4-mapped'], ['[::ffff:7f00:1]', 'IPv4-mapped hex'], ['[::ffff:10.0.0.1]', 'IPv4-mapped RFC 1918'],
  ['[::ffff:169.254.169.254]', 'IPv4-mapped metadata'], ['[64:ff9b::7f00:1]', 'NAT64 loopback'], ['[64:ff9b::a9fe:a9fe]', 'NAT64 metadata'],
  ['[::127.0.0.1]', 'IPv4-compatible'], ['[2002:7f00:1::]', '6to4 of loopback'],
  ['2130706433', 'decimal 127.0.0.1'], ['0x7f000001', 'hex 127.0.0.1'], ['0X7F000001', 'upper hex'], ['017700000001', 'octal 127.0.0.1'],
  ['127.1', 'short 127.0.0.1'], ['127.0.1', 'short 127.0.0.1'], ['0177.0.0.1', 'octal part'], ['0x7f.1', 'hex part'],
  ['127.0.0.1.', 'trailing dot'], ['0', 'zero'], ['3232235777', 'decimal 192.168.1.1'], ['2852039166', 'decimal metadata'],
  ['0xa9fea9fe', 'hex metadata'], ['0251.0376.0251.0376', 'octal metadata'],
]
/** Hosts that are public and must be accepted: the controls that show the check can say yes. */
const PUBLIC = ['93.184.216.34', '8.8.8.8', '[2606:4700:4700::1111]', 'example.com', '1.1.1.1']

const key = newAdminKey()
const cleanups: (() => void | Promise<void>)[] = []
let open: ServerProcess
let allowLocal: ServerProcess
let receiver: HostileReceiver

beforeAll(async () => {
  await ensureBuilt()
  receiver = await startRecordingReceiver('127.0.0.1')
  cleanups.push(() => receiver.close())
  const a = tempDir('postbox-ssrf-')
  const b = tempDir('postbox-ssrf-')
  cleanups.push(a.cleanup, b.cleanup)
  // No allow-list at all: the production default.
  open = await startServer(serverEnv(a.dir, key, { POSTBOX_ALLOW_NETWORKS: '', POSTBOX_RETRY_SCHEDULE: '100ms' }))
  // Only 127.0.0.1 allowed: redirects from there towards 127.0.0.2 and beyond must not be followed.
  allowLocal = await startServer(serverEnv(b.dir, key, { POSTBOX_ALLOW_NETWORKS: '127.0.0.1/32', POSTBOX_RETRY_SCHEDULE: '100ms' }))
}, 180_000)

afterAll(async () => {
  await killAllChildren()
  for (const c of cleanups.reverse()) await c()
})

async function waitTerminal(call: ReturnType<typeof apiClient>, eventId: string): Promise<any> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const ev = await call('GET', `/v1/events/${eventId}`)
    const d = ev.json?.deliveries?.[0]
    if (d && (d.status === 'dead' || d.status === 'success')) return (await call('GET', `/v1/deliveries/${d.id}`)).json
    if (Date.now() > deadline) throw new Error(`delivery of ${eventId} did not finish: ${JSON.stringify(ev.json)}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

describe('SSRF matrix', () => {
  it('the address policy refuses every blocked range and accepts public addresses', async () => {
    const policy = createAddressPolicy([])
    for (const [host, what] of BLOCKED) {
      const parsed = new URL(`http://${host}/`).hostname.replace(/^\[|\]$/g, '')
      expect(policy.isAllowed(parsed), `${host} (${what}) → ${parsed}`).toBe(false)
    }
    for (const ip of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '1.1.1.1']) expect(policy.isAllowed(ip), ip).toBe(true)
  })

  it('a name resolving to any blocked address is refused by the connect-time lookup (stub resolver)', async () => {
    const policy = createAddressPolicy([])
    const addresses = BLOCKED.map(([host]) => new URL(`http://${host}/`).hostname.replace(/^\[|\]$/g, ''))
    const lookupVia = (answer: { address: string; family: number }[]) =>
      new Promise<{ err: Error | null; result: unknown }>((resolve) => {
        const stub = ((_name: string, _opts: unknown, cb: (err: Error | null, a: unknown) => void) => cb(null, answer)) as never
        guardedLookup(policy, stub)('evil.example', { all: false }, ((err: Error | null, result: unknown) => resolve({ err, result })) as never)
      })
    for (const address of addresses) {
      const { err } = await lookupVia([{ address, family: address.includes(':') ? 6 : 4 }])
      expect((err as { code?: string } | null)?.code, address).toBe('destination_not_allowed')
    }
    // Mixed answers (a rebinding attempt): only the public address may be connected to.
    const mixed = await lookupVia([{ address: '10.0.0.1', family: 4 }, { address: '93.184.216.34', family: 4 }, { address: '::1', family: 6 }])
    expect(mixed.err).toBeNull()
    expect(mixed.result).toBe('93.184.216.34')
  })

  it('refuses every blocked literal at endpoint create with 422 destination_not_allowed', async () => {
    const call = apiClient(() => open.baseUrl, key)
    const wrong: string[] = []
    for (const [host, what] of BLOCKED) {
      for (const url of [`http://${host}/hook`, `https://${host}:8443/x?y=1`]) {
        const res = await call('POST', '/v1/endpoints', { url })
        if (res.status !== 422 || res.json?.error?.code !== 'destination_not_allowed') wrong.push(`${url} (${what}): ${res.status} ${res.text}`)
      }
    }
    expect(wrong).toEqual([])
    const list = await call('GET', '/v1/endpoints?limit=200')
    expect(list.json.data).toEqual([])
  })

  it('refuses the same literals on update, and accepts public controls', async () => {
    const call = apiClient(() => open.baseUrl, key)
    const ok: string[] = []
    for (const host of PUBLIC) {
      const res = await call('POST', '/v1/endpoints', { url: `https://${host}/hook`, disabled: true })
      expect(res.status, `${host}: ${res.text}`).toBe(201)
      ok.push(res.json.id)
    }
    for (const [host] of BLOCKED.slice(0, 12)) {
      const res = await call('PATCH', `/v1/endpoints/${ok[0]}`, { url: `http://${host}/` })
      expect([res.status, res.json?.error?.code], host).toEqual([422, 'destination_not_allowed'])
    }
    expect((await call('GET', `/v1/endpoints/${ok[0]}`)).json.url).toBe(`https://${PUBLIC[0]}/hook`)
    for (const id of ok) expect((await call('DELETE', `/v1/endpoints/${id}`)).status).toBe(200)
  })

  it('refuses non-http schemes and URLs with credentials', async () => {
    const call = apiClient(() => open.baseUrl, key)
    for (const url of ['ftp://example.com/', 'file:///etc/passwd', 'gopher://example.com/', 'javascript:alert(1)', 'http://user:pass@example.com/',
      'http://example.com@127.0.0.1/', '//127.0.0.1/', 'http:/\\127.0.0.1/', 'not a url']) {
      const res = await call('POST', '/v1/endpoints', { url })
      expect([400, 422], `${url}: ${res.status} ${res.text}`).toContain(res.status)
      expect(typeof res.json?.error?.code).toBe('string')
    }
  })

  it('a host name that resolves to loopback is refused at connect: dead, not retried, nothing received', async () => {
    const call = apiClient(() => open.baseUrl, key)
    const before = receiver.requests
    for (const host of ['localhost', 'LOCALHOST', 'localhost.']) {
      const type = `ssrf.name.${host.replace(/\W/g, '')}`
      const ep = await call('POST', '/v1/endpoints', { url: `http://${host}:${receiver.port}/hook`, event_types: [type] })
      if (ep.status === 422) continue // refused at create: also correct
      expect(ep.status, ep.text).toBe(201)
      const ev = await call('POST', '/v1/events', { type, data: {} })
      expect(ev.status, ev.text).toBe(202)
      const d = await waitTerminal(call, ev.json.id)
      expect([d.status, d.last_error, d.attempt_count], host).toEqual(['dead', 'destination_not_allowed', 1])
    }
    expect(receiver.requests).toBe(before)
    expect(receiver.connections).toBe(0)
  })

  it('redirects towards private addresses are never followed', async () => {
    const call = apiClient(() => allowLocal.baseUrl, key)
    const target = await startRecordingReceiver('127.0.0.2')
    cleanups.push(() => target.close())
    const ep = await call('POST', '/v1/endpoints', { url: target.url })
    expect([ep.status, ep.json?.error?.code]).toEqual([422, 'destination_not_allowed'])
    const locations = [target.url, `http://localhost:${target.port}/`, 'http://169.254.169.254/latest/meta-data/', `http://[::ffff:127.0.0.2]:${target.port}/`, 'http://2130706434/']
    for (const [i, location] of locations.entries()) {
      const r = await startRedirectReceiver(location, [301, 302, 303, 307, 308][i % 5]!)
      cleanups.push(() => r.close())
      const type = `ssrf.redirect.${i}`
      const created = await call('POST', '/v1/endpoints', { url: r.url, event_types: [type] })
      expect(created.status, created.text).toBe(201)
      const ev = await call('POST', '/v1/events', { type, data: {} })
      const d = await waitTerminal(call, ev.json.id)
      expect([d.status, d.last_error, d.attempt_count], location).toEqual(['dead', 'redirect_not_followed', 1])
      expect(r.requests).toBe(1)
    }
    expect(target.requests).toBe(0)
    expect(target.connections).toBe(0)
  })

  it('a literal stored while allowed is refused at connect after the allow-list is narrowed', async () => {
    const t = tempDir('postbox-ssrf-')
    cleanups.push(t.cleanup)
    const before = receiver.requests
    let server = await startServer(serverEnv(t.dir, key, { POSTBOX_ALLOW_NETWORKS: '127.0.0.0/8', POSTBOX_RETRY_SCHEDULE: '100ms' }))
    let call = apiClient(() => server.baseUrl, key)
    const ep = await call('POST', '/v1/endpoints', { url: `http://127.0.0.1:${receiver.port}/stored`, event_types: ['stored.*'] })
    expect(ep.status, ep.text).toBe(201)
    expect(await server.stop()).toBe(0)
    server = await startServer(serverEnv(t.dir, key, { POSTBOX_ALLOW_NETWORKS: '', POSTBOX_RETRY_SCHEDULE: '100ms' }))
    call = apiClient(() => server.baseUrl, key)
    for (const path of ['/v1/events', `/v1/endpoints/${ep.json.id}/test`]) {
      const ev = await call('POST', path, path === '/v1/events' ? { type: 'stored.x', data: {} } : {})
      expect([200, 202], ev.text).toContain(ev.status)
      if (path === '/v1/events') {
        const d = await waitTerminal(call, ev.json.id)
        expect([d.status, d.last_error, d.attempt_count]).toEqual(['dead', 'destination_not_allowed', 1])
      }
    }
    await new Promise((r) => setTimeout(r, 300))
    expect(receiver.requests).toBe(before)
    expect(await server.stop()).toBe(0)
  })
})
