import { describe, expect, it } from 'vitest'
import type { PreferenceRow } from '../store/directory.js'
import { decideChannel, isMandatoryTopic, matchPreference, quietHoursFor } from './preferences.js'

const row = (userId: string, topic: string, channel: string, over: Partial<PreferenceRow> = {}): PreferenceRow => ({
  userId,
  topic,
  channel,
  enabled: true,
  digest: 'none',
  quietHours: null,
  updatedAt: 0,
  ...over,
})

describe('preference precedence', () => {
  // Every level of the 8-step order, each tagged so the winner is visible.
  const all = [
    row('*', '*', '*', { digest: 'weekly', enabled: false }),
    row('*', '*', 'email', { digest: 'daily' }),
    row('*', 'a.b', '*'),
    row('*', 'a.b', 'email'),
    row('u1', '*', '*'),
    row('u1', '*', 'email'),
    row('u1', 'a.b', '*'),
    row('u1', 'a.b', 'email'),
  ]
  const order = [
    ['u1', 'a.b', 'email'],
    ['u1', 'a.b', '*'],
    ['u1', '*', 'email'],
    ['u1', '*', '*'],
    ['*', 'a.b', 'email'],
    ['*', 'a.b', '*'],
    ['*', '*', 'email'],
    ['*', '*', '*'],
  ]
  it('picks the most specific row, in the documented order', () => {
    let rows = [...all]
    for (const expected of order) {
      const m = matchPreference(rows, 'u1', 'a.b', 'email')!
      expect([m.userId, m.topic, m.channel]).toEqual(expected)
      rows = rows.filter((r) => r !== m)
    }
    expect(matchPreference(rows, 'u1', 'a.b', 'email')).toBeNull()
  })
  it('ignores rows of other users, topics and channels', () => {
    const rows = [row('u2', 'a.b', 'email', { enabled: false }), row('u1', 'x', 'email', { enabled: false }), row('u1', 'a.b', 'inbox', { enabled: false })]
    expect(matchPreference(rows, 'u1', 'a.b', 'email')).toBeNull()
    expect(decideChannel(rows, 'u1', 'a.b', 'email', []).enabled).toBe(true)
  })
  it('is on when no row matches, and enabled=false mutes the channel', () => {
    expect(decideChannel([], 'u1', 't', 'email', [])).toEqual({ enabled: true, digest: 'none', quietHours: null, mandatory: false })
    expect(decideChannel([row('u1', '*', 'email', { enabled: false })], 'u1', 't', 'email', []).enabled).toBe(false)
    expect(decideChannel([row('u1', '*', 'email', { enabled: false })], 'u1', 't', 'inbox', []).enabled).toBe(true)
  })
  it('a user row beats a global row', () => {
    const rows = [row('*', 't', 'email', { enabled: false }), row('u1', '*', '*', { enabled: true })]
    expect(decideChannel(rows, 'u1', 't', 'email', []).enabled).toBe(true)
    expect(decideChannel(rows, 'u2', 't', 'email', []).enabled).toBe(false)
  })
})

describe('quiet hours row', () => {
  const qhA = { tz: 'UTC', start: '22:00', end: '07:00' }
  const qhB = { tz: 'Europe/Paris', start: '20:00', end: '08:00' }
  it('comes from the first row with a * channel, in precedence order', () => {
    const rows = [row('*', '*', '*', { quietHours: qhA }), row('u1', '*', '*', { quietHours: qhB }), row('u1', 't', 'email', { quietHours: qhA })]
    expect(quietHoursFor(rows, 'u1', 't')).toEqual(qhB)
    expect(quietHoursFor(rows, 'u2', 't')).toEqual(qhA)
  })
  it('a more specific * row with null quiet hours switches a global window off', () => {
    const rows = [row('*', '*', '*', { quietHours: qhA }), row('u1', 't', '*', { quietHours: null })]
    expect(quietHoursFor(rows, 'u1', 't')).toBeNull()
    expect(quietHoursFor(rows, 'u1', 'other')).toEqual(qhA)
  })
})

describe('mandatory topics', () => {
  it('match exact names and prefixes ending in "."', () => {
    const list = ['security.', 'billing.invoice_due']
    expect(isMandatoryTopic('security.login', list)).toBe(true)
    expect(isMandatoryTopic('security', list)).toBe(false)
    expect(isMandatoryTopic('billing.invoice_due', list)).toBe(true)
    expect(isMandatoryTopic('billing.invoice_due.late', list)).toBe(false)
  })
  it('skip preferences, quiet hours and digests', () => {
    const rows = [row('u1', '*', '*', { enabled: false, digest: 'daily', quietHours: { tz: 'UTC', start: '00:00', end: '23:59' } })]
    expect(decideChannel(rows, 'u1', 'security.login', 'email', ['security.'])).toEqual({
      enabled: true,
      digest: 'none',
      quietHours: null,
      mandatory: true,
    })
  })
})
