import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { INBOX_SQL } from './inbox-sql.js'
import { type NewInboxMessage } from '../inbox.js'
import { LIST_SCAN_LIMIT } from '../capped-scan.js'
import { tempSqliteStore } from '../../../test/helpers.js'

let t: ReturnType<typeof tempSqliteStore>
beforeEach(() => {
  t = tempSqliteStore()
})
afterEach(() => t.cleanup())

const plan = (sql: string): string => {
  const params: Record<string, string> = {}
  for (const [, name] of sql.matchAll(/@(\w+)/g)) params[name!] = name === 'ids' ? '[]' : 'u'
  const stmt = t.store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`)
  const rows = Object.keys(params).length > 0 ? stmt.all(params) : stmt.all(...Array.from(sql.matchAll(/\?/g), () => 'u'))
  return (rows as { detail: string }[]).map((r) => r.detail).join(' | ')
}

describe('inbox query plans', () => {
  it('changes messages by id through the primary key, not by walking the user inbox', () => {
    for (const name of ['read', 'unreadState', 'seen', 'archive', 'unarchive'] as const) {
      expect(`${name}: ${plan(INBOX_SQL[name])}`).toMatch(/USING INDEX sqlite_autoindex_inbox_messages_1 \(id=\?\)/)
    }
  })

  it('marks all read from the unread index', () => {
    expect(plan(INBOX_SQL.readAll)).toMatch(/inbox_unread/)
  })
})

describe('inbox list by topic', () => {
  it('reads at most LIST_SCAN_LIMIT messages per page and continues where it stopped', () => {
    const message = (topic: string, i: number): NewInboxMessage => ({
      userId: 'u1', notificationId: null, deliveryId: `dlv_${topic}${i}`, topic, title: 't', body: '', severity: 'info', actionUrl: null, payload: null,
    })
    const inbox = t.store.inbox
    inbox.insertMessages([message('rare', 0)], 1)
    inbox.insertMessages(Array.from({ length: LIST_SCAN_LIMIT + 100 }, (_, i) => message('common', i)), 2)
    inbox.insertMessages([message('rare', 1), message('common', -1)], 3)
    for (const status of ['all', 'unread', 'read'] as const) {
      if (status === 'read') {
        // Read messages are counted by the cap too: mark the two rare ones read, none of the others.
        const rare = inbox.list('u1', { status: 'all', archived: false, topic: 'rare', limit: 10 })
        expect(rare.data).toHaveLength(1)
        const ids = [...rare.data, ...inbox.list('u1', { status: 'all', archived: false, topic: 'rare', limit: 10, cursor: rare.nextCursor }).data].map((m) => m.id)
        expect(inbox.changeState('u1', null, ids, 'read', 4).updated).toBe(2)
      }
      const filter = { status, archived: false, topic: 'rare', limit: 10 }
      const first = inbox.list('u1', filter)
      expect(first.data.map((m) => m.deliveryId)).toEqual(['dlv_rare1'])
      expect(first.nextCursor).not.toBeNull()
      const second = inbox.list('u1', { ...filter, cursor: first.nextCursor })
      expect(second.data.map((m) => m.deliveryId)).toEqual(['dlv_rare0'])
      expect(second.nextCursor).toBeNull()
    }
    // A full page pages by its last message, as without a topic.
    const common = inbox.list('u1', { status: 'all', archived: false, topic: 'common', limit: 2 })
    expect(common.data.map((m) => m.deliveryId)).toEqual(['dlv_common-1', `dlv_common${LIST_SCAN_LIMIT + 99}`])
    expect(inbox.list('u1', { status: 'all', archived: false, topic: 'common', limit: 1, cursor: common.nextCursor }).data[0]!.deliveryId).toBe(`dlv_common${LIST_SCAN_LIMIT + 98}`)
  })
})
