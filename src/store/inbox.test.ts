import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { INBOX_SQL } from './inbox.js'
import { tempStore } from '../../test/helpers.js'

let t: ReturnType<typeof tempStore>
beforeEach(() => {
  t = tempStore()
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
