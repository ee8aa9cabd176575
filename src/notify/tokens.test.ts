import { describe, expect, it } from 'vitest'
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { ConfigError } from '../config.js'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { issueUserToken, loadTokenKey, verifyUserToken } from './tokens.js'

describe('user tokens', () => {
  const key = 'k'.repeat(32)
  it('verifies a token until it expires', () => {
    const token = issueUserToken(key, 'u1', 1_000)
    expect(verifyUserToken(key, token, 999)).toEqual({ userId: 'u1', expiresAt: 1_000, appId: null })
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
    // The same MAC spelled in base64 (`+/`) rather than base64url is not the token handed out.
    const plain = Buffer.from(mac!, 'base64url').toString('base64').replace(/=+$/, '')
    expect(plain).not.toBe(mac)
    expect(verifyUserToken(key, `pbu_${body}.${plain}`, 0)).toBeNull()
    // The last of 43 characters carries 2 unused bits: the other values decode to the same MAC.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
    const last = alphabet.indexOf(mac!.at(-1)!)
    const twin = mac!.slice(0, -1) + alphabet[(last & ~3) | ((last + 1) & 3)]
    expect(Buffer.from(twin, 'base64url').equals(Buffer.from(mac!, 'base64url'))).toBe(true)
    expect(verifyUserToken(key, `pbu_${body}.${twin}`, 0)).toBeNull()
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
      expect(readdirSync(join(dir, 'data'))).toEqual(['token-secret.txt'])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('refuses an empty or short key file rather than signing forgeable tokens, and narrows its mode', () => {
    const dir = mkdtempSync(join(tmpdir(), 'postbox-token-'))
    const file = join(dir, 'token-secret.txt')
    try {
      for (const text of ['', '\n', 'x'.repeat(31)]) {
        writeFileSync(file, text)
        expect(() => loadTokenKey(null, dir)).toThrow(ConfigError)
      }
      writeFileSync(file, 'y'.repeat(32), { mode: 0o644 })
      chmodSync(file, 0o644)
      expect(loadTokenKey(null, dir)).toBe('y'.repeat(32))
      expect(statSync(file).mode & 0o777).toBe(0o600)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
