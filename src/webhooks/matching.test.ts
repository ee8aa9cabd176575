import { describe, expect, it } from 'vitest'
import { endpointWants, patternMatches } from './matching.js'

describe('event-type matching', () => {
  const cases: [string, string, boolean][] = [
    ['*', 'a.b', true],
    ['invoice.*', 'invoice.paid', true],
    ['invoice.*', 'invoice.line.added', true],
    ['invoice.*', 'invoice', false],
    ['invoice.*', 'invoices.paid', false],
    ['invoice.paid', 'invoice.paid', true],
    ['invoice.paid', 'invoice.paid.late', false],
    ['inv*', 'invoice.paid', true],
  ]
  for (const [p, t, want] of cases) it(`${p} ${want ? 'matches' : 'does not match'} ${t}`, () => expect(patternMatches(p, t)).toBe(want))

  it('treats an absent filter as every (non-operational) type', () => {
    expect(endpointWants(null, 'anything')).toBe(true)
    expect(endpointWants(['a'], 'b')).toBe(false)
  })

  it('delivers postbox.* only to endpoints that name it', () => {
    expect(endpointWants(null, 'postbox.endpoint.disabled')).toBe(false)
    expect(endpointWants(['*'], 'postbox.endpoint.disabled')).toBe(false)
    expect(endpointWants(['p*'], 'postbox.endpoint.disabled')).toBe(false)
    expect(endpointWants(['postbox.*'], 'postbox.endpoint.disabled')).toBe(true)
    expect(endpointWants(['postbox.endpoint.disabled'], 'postbox.endpoint.disabled')).toBe(true)
  })
})
