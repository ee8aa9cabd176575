import { describe, expect, it, vi } from 'vitest'
import { newId, randomToken, type IdPrefix } from './ids.js'

const T = Date.UTC(2026, 0, 1)

describe('newId', () => {
  it.each<IdPrefix>(['evt', 'ep', 'dlv', 'ntf', 'msg', 'key', 'usr'])('has the %s_ prefix and 26 base32 characters', (prefix) => {
    expect(newId(prefix, T)).toMatch(new RegExp(`^${prefix}_[0-9a-hjkmnp-tv-z]{26}$`))
  })

  it('sorts by creation time across milliseconds', () => {
    const times = [T + 10_000, T + 20_000, T + 20_001, T + 86_400_000 * 365]
    const made = times.map((t) => newId('evt', t))
    expect([...made].sort()).toEqual(made)
    // The first 10 characters encode the millisecond, so later times compare greater.
    expect(made[1]!.slice(4, 14) < made[2]!.slice(4, 14)).toBe(true)
  })

  it('is strictly increasing within one millisecond', () => {
    const t = T + 50_000_000
    const made = Array.from({ length: 2_000 }, () => newId('dlv', t))
    for (let i = 1; i < made.length; i++) expect(made[i - 1]! < made[i]!).toBe(true)
    expect(new Set(made).size).toBe(made.length)
    expect(new Set(made.map((id) => id.slice(4, 14))).size).toBe(1)
  })

  it('stays monotonic when the clock goes backwards', () => {
    const later = newId('evt', T + 90_000_000)
    const earlier = newId('evt', T + 80_000_000)
    expect(earlier > later).toBe(true)
  })

  it('is well formed when the first id of a process is for time 0', async () => {
    vi.resetModules()
    const fresh = await import('./ids.js')
    expect(fresh.newId('evt', 0)).toMatch(/^evt_0{10}[0-9a-hjkmnp-tv-z]{16}$/)
  })

  it('encodes the millisecond in the first ten characters', () => {
    const id = newId('evt', Date.UTC(2030, 0, 1))
    const alphabet = '0123456789abcdefghjkmnpqrstvwxyz'
    const ms = [...id.slice(4, 14)].reduce((acc, ch) => acc * 32 + alphabet.indexOf(ch), 0)
    expect(ms).toBe(Date.UTC(2030, 0, 1))
  })
})

describe('randomToken', () => {
  it('returns base64url of the requested size, different each time', () => {
    const a = randomToken(32)
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(randomToken(32)).not.toBe(a)
    expect(Buffer.from(randomToken(), 'base64url')).toHaveLength(16)
  })
})
