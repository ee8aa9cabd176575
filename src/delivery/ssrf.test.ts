import { describe, expect, it } from 'vitest'
import { createAddressPolicy, guardedLookup, literalIp } from './ssrf.js'

describe('address policy', () => {
  const strict = createAddressPolicy([])
  const refused = [
    '127.0.0.1', '127.255.0.9', '10.0.0.1', '172.16.5.4', '172.31.255.255', '192.168.0.1', '169.254.169.254', '100.64.0.1',
    '100.127.255.255', '0.0.0.0', '224.0.0.1', '255.255.255.255', '::1', '::', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'ff02::1',
    '::ffff:127.0.0.1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '64:ff9b::7f00:1', '64:ff9b::a00:1', '64:ff9b:1::1',
    '2002:7f00:1::', '::127.0.0.1', '2001:db8::1', 'not an ip',
  ]
  for (const ip of refused) it(`refuses ${ip}`, () => expect(strict.isAllowed(ip)).toBe(false))

  const allowed = ['93.184.215.14', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808']
  for (const ip of allowed) it(`allows ${ip}`, () => expect(strict.isAllowed(ip)).toBe(true))

  it('opens allowed networks, including the IPv4-mapped form of an allowed IPv4 range', () => {
    const p = createAddressPolicy(['127.0.0.0/8', '::1/128'])
    expect(p.isAllowed('127.0.0.1')).toBe(true)
    expect(p.isAllowed('::1')).toBe(true)
    expect(p.isAllowed('::ffff:127.0.0.1')).toBe(true)
    expect(p.isAllowed('10.0.0.1')).toBe(false)
  })

  it('recognises IP literals in URL hostnames', () => {
    expect(literalIp('[::1]')).toBe('::1')
    expect(literalIp('10.0.0.1')).toBe('10.0.0.1')
    expect(literalIp('example.com')).toBeNull()
  })
})

describe('guardedLookup', () => {
  const fake = (addresses: { address: string; family: number }[]) =>
    ((_h: string, _o: unknown, cb: (e: null, a: typeof addresses) => void) => cb(null, addresses)) as never

  it('drops refused addresses and fails when none is left', async () => {
    const lookup = guardedLookup(createAddressPolicy([]), fake([{ address: '127.0.0.1', family: 4 }]))
    const err = await new Promise((resolve) => lookup('x', { all: true }, (e) => resolve(e)))
    expect(err).toMatchObject({ code: 'destination_not_allowed' })
  })

  it('returns only allowed addresses, in the shape the caller asked for', async () => {
    const lookup = guardedLookup(createAddressPolicy([]), fake([{ address: '10.0.0.1', family: 4 }, { address: '8.8.8.8', family: 4 }]))
    const all = await new Promise((resolve) => lookup('x', { all: true }, (_e, a) => resolve(a)))
    expect(all).toEqual([{ address: '8.8.8.8', family: 4 }])
    const one = await new Promise((resolve) => lookup('x', {}, (_e, a, f) => resolve([a, f])))
    expect(one).toEqual(['8.8.8.8', 4])
  })
})
