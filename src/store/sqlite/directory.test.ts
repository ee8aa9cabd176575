import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { PreferenceRow } from '../directory.js'
import { tempSqliteStore } from '../../../test/helpers.js'

let t: ReturnType<typeof tempSqliteStore>
beforeEach(() => {
  t = tempSqliteStore()
})
afterEach(() => t.cleanup())

const pref = (userId: string, topic: string, enabled: boolean): PreferenceRow => ({ userId, topic, channel: 'email', enabled, digest: 'none', quietHours: null, updatedAt: 0 })

describe('preferencesForTopic', () => {
  it('gives each recipient its own rows plus the global ones, for a short list and for a huge one', () => {
    const d = t.store.directory
    d.putPreference(pref('*', 'billing', false))
    d.putPreference(pref('u1', 'billing', true))
    d.putPreference(pref('u2', '*', false))
    d.putPreference(pref('u3', 'other', false))
    const few = d.preferencesForTopic('billing', ['u1', 'u2', 'u3', 'u4'])
    // Past 20,000 recipients the lookup asks about the topic instead of each recipient.
    const many = d.preferencesForTopic('billing', Array.from({ length: 20_001 }, (_, i) => `u${i}`))
    for (const lookup of [few, many]) {
      expect(lookup('u1').map((p) => [p.userId, p.topic, p.enabled])).toEqual([['u1', 'billing', true], ['*', 'billing', false]])
      expect(lookup('u2').map((p) => [p.userId, p.topic])).toEqual([['u2', '*'], ['*', 'billing']])
      expect(lookup('u3').map((p) => p.userId)).toEqual(['*'])
      expect(lookup('u4').map((p) => p.userId)).toEqual(['*'])
    }
  })
})
