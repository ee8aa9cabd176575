import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { encodeCursor } from '../../lib/cursor.js'
import { eventListQuery } from './events.js'
import { tempSqliteStore } from '../../../test/helpers.js'

let t: ReturnType<typeof tempSqliteStore>
beforeEach(() => {
  t = tempSqliteStore()
})
afterEach(() => t.cleanup())

describe('events list', () => {
  it('pages through one type newest first, read from the (type, id) index', () => {
    const ids = Array.from({ length: 9 }, (_, i) => `evt_${String(i).padStart(26, '0')}`)
    ids.forEach((id, i) => t.store.events.insert({ id, clientId: null, type: i % 3 === 0 ? 'rare.type' : 'common', orderingKey: null, body: '{}', createdAt: i }))
    const first = t.store.events.list({ limit: 2, type: 'rare.type' })
    const second = t.store.events.list({ limit: 2, type: 'rare.type', cursor: first.next_cursor })
    expect([...first.data, ...second.data].map((e) => e.id)).toEqual([ids[6], ids[3], ids[0]])
    expect(second.next_cursor).toBeNull()
    const { sql, params } = eventListQuery({ limit: 2, type: 'rare.type', cursor: encodeCursor(ids[5]!) })
    const plan = (t.store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail).join(' | ')
    expect(plan).toMatch(/USING INDEX events_type \(type=\? AND id<\?\)/)
  })
})
