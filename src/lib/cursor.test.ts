import { describe, expect, it } from 'vitest'
import { decodeCursor, decodeIdCursor, decodeInboxCursor, encodeCursor } from './cursor.js'

describe('cursor', () => {
  it.each(['dlv_01jabcdefghjkmnpqrstvwxyz0', 'ep_01jabcdefghjkmnpqrstvwxyz0', '123456', 'o50'])('round-trips %j', (key) => {
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
    // Printable, but never handed out: a cursor must hold an id, a position or an offset.
    ['decodes to a word', Buffer.from('zzz').toString('base64url')],
    ['decodes to a short id', Buffer.from('evt_1').toString('base64url')],
    ['decodes to an offset with a sign', Buffer.from('o-5').toString('base64url')],
  ])('returns null when %s', (_name, cursor) => {
    expect(decodeCursor(cursor)).toBeNull()
  })

  it('gives each list only its own kind of cursor', () => {
    const [id, msg, pos, offset, sub] = ['dlv_01jabcdefghjkmnpqrstvwxyz0', 'msg_01jabcdefghjkmnpqrstvwxyz0', '12', 'o50', 'sub/1/t/user:u'].map(encodeCursor)
    expect([id, msg, pos, offset, sub].map((c) => decodeCursor(c) !== null)).toEqual([true, true, true, true, true])
    expect([id, msg, pos, offset, sub].map((c) => decodeIdCursor(c) !== null)).toEqual([true, true, false, false, false])
    expect([id, msg, pos, offset, sub].map((c) => decodeInboxCursor(c) !== null)).toEqual([false, true, true, false, false])
    expect(decodeCursor(encodeCursor('zzz/x'))).toBeNull()
  })
})
