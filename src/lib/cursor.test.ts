import { describe, expect, it } from 'vitest'
import { decodeCursor, encodeCursor } from './cursor.js'

describe('cursor', () => {
  it.each(['dlv_01jabcdefghjkmnpqrstvwxyz0', 'evt_1', 'a'])('round-trips %j', (key) => {
    const c = encodeCursor(key)
    expect(c).toMatch(/^[A-Za-z0-9_-]+$/)
    expect(decodeCursor(c)).toBe(key)
  })

  it.each([
    ['undefined', undefined],
    ['null', null],
    ['empty', ''],
    ['not base64url', 'abc+/='],
    ['too long', 'a'.repeat(401)],
    ['decodes to control characters', Buffer.from('a\nb').toString('base64url')],
    ['decodes to spaces', Buffer.from('a b').toString('base64url')],
    ['decodes to non-ASCII', Buffer.from('dlv_é').toString('base64url')],
  ])('returns null when %s', (_name, cursor) => {
    expect(decodeCursor(cursor)).toBeNull()
  })
})
