import { describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { issueUserToken, loadTokenKey, verifyUserToken } from './tokens.js'

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

describe('token key', () => {
  it('prefers the configured secret, else generates one file with mode 0600 and reuses it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'postbox-token-'))
    try {
      expect(loadTokenKey('configured', dir)).toBe('configured')
      const first = loadTokenKey(null, join(dir, 'data'))
      expect(String(first).length).toBeGreaterThanOrEqual(40)
      expect(statSync(join(dir, 'data', 'token-secret.txt')).mode & 0o777).toBe(0o600)
      expect(loadTokenKey(null, join(dir, 'data'))).toBe(first)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
