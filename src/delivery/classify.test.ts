import { describe, expect, it } from 'vitest'
import { classifyResponse, classifyTransportError, parseRetryAfter } from './classify.js'

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0)
const DAY = 86_400_000

describe('classifyResponse (docs/delivery.md, "Responses and retries")', () => {
  it.each([200, 201, 202, 204, 299])('%d is success', (status) => {
    expect(classifyResponse(status, null, NOW)).toEqual({ kind: 'success' })
  })

  it.each([
    [408, false],
    [425, false],
    [429, false],
    [500, true],
    [502, true],
    [503, true],
    [504, true],
    [599, true],
  ])('%d is retry (breaker failure: %s)', (status, breakerFailure) => {
    expect(classifyResponse(status, null, NOW)).toEqual({ kind: 'retry', error: `http_${status}`, retryAfterMs: null, breakerFailure })
  })

  it('410 is dead and disables the endpoint as gone', () => {
    expect(classifyResponse(410, null, NOW)).toEqual({ kind: 'dead', error: 'gone', disable: 'gone' })
  })

  it.each([300, 301, 302, 307, 308])('%d is dead: redirects are never followed', (status) => {
    expect(classifyResponse(status, null, NOW)).toEqual({ kind: 'dead', error: 'redirect_not_followed', disable: null })
  })

  it.each([400, 401, 403, 404, 405, 409, 413, 422, 451])('%d is dead', (status) => {
    expect(classifyResponse(status, null, NOW)).toEqual({ kind: 'dead', error: `http_${status}`, disable: null })
  })

  it.each([
    [429, '120', 120_000],
    [503, '5', 5_000],
    [429, new Date(NOW + 90_000).toUTCString(), 90_000],
    [503, new Date(NOW + 3 * DAY).toUTCString(), DAY],
    [429, '999999', DAY],
  ])('%d honours Retry-After %j', (status, header, ms) => {
    expect(classifyResponse(status, header, NOW)).toMatchObject({ kind: 'retry', retryAfterMs: ms })
  })

  it.each([408, 425, 500, 502, 504])('%d ignores Retry-After', (status) => {
    expect(classifyResponse(status, '120', NOW)).toMatchObject({ kind: 'retry', retryAfterMs: null })
  })
})

describe('parseRetryAfter', () => {
  it.each([
    ['0', 0],
    ['30', 30_000],
    [' 7 ', 7_000],
    [new Date(NOW + 60_000).toUTCString(), 60_000],
    [new Date(NOW - 60_000).toUTCString(), 0],
    ['86401', DAY],
  ])('%j → %d ms', (header, ms) => {
    expect(parseRetryAfter(header, NOW)).toBe(ms)
  })

  it.each([null, undefined, '', '-5', '1.5', 'soon', '12abc'])('%j → null', (header) => {
    expect(parseRetryAfter(header, NOW)).toBeNull()
  })
})

describe('classifyTransportError', () => {
  it.each(['ECONNREFUSED', 'ETIMEDOUT', 'ENOTFOUND', 'timeout', 'ECONNRESET'])('%s is a retry that counts for the breaker', (code) => {
    expect(classifyTransportError(code)).toEqual({ kind: 'retry', error: code, retryAfterMs: null, breakerFailure: true })
  })

  it('a destination refused by the SSRF guard is dead', () => {
    expect(classifyTransportError('destination_not_allowed')).toEqual({ kind: 'dead', error: 'destination_not_allowed', disable: null })
  })
})
