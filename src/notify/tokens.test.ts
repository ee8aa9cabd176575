import { describe, expect, it } from 'vitest'
import { issueUserToken, verifyUserToken } from './tokens.js'

describe('user tokens', () => {
  const key = 'k'.repeat(32)
  it('verifies a token until it expires', () => {
    const token = issueUserToken(key, 'u1', 1_000)
    expect(verifyUserToken(key, token, 999)).toEqual({ userId: 'u1', expiresAt: 1_000 })
    expect(verifyUserToken(key, token, 1_000)).toBeNull()
  })
  it('rejects another key, a tampered payload and garbage', () => {
    const token = issueUserToken(key, 'u1', 1_000)
    expect(verifyUserToken('other-key', token, 0)).toBeNull()
    const [body, mac] = token.slice(4).split('.')
    const forged = Buffer.from(JSON.stringify({ sub: 'u2', exp: 1_000 })).toString('base64url')
    expect(verifyUserToken(key, `pbu_${forged}.${mac}`, 0)).toBeNull()
    expect(verifyUserToken(key, `pbu_${body}`, 0)).toBeNull()
    expect(verifyUserToken(key, 'pbk_whatever', 0)).toBeNull()
  })
})
