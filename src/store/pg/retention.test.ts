import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ADMIN_BACKENDS, addDelivery, addEndpoint, openAdminBackend, type AdminBackend } from '../../../test/support/admin-backends.js'
import type { RetentionOptions } from '../retention.js'

const DAY = 86_400_000
const NOW = Date.UTC(2026, 3, 1)
const periods: RetentionOptions = { now: NOW, successMs: 7 * DAY, deadMs: 30 * DAY, inboxMs: 90 * DAY, eventsMs: 7 * DAY }

// The cases of src/store/retention.test.ts that say what goes and what stays; how many rows a
// transaction reads differs by engine (src/store/pg/retention.ts), so those cases are SQLite's.
describe.each(ADMIN_BACKENDS)('retention sweep contract (%s)', (name) => {
  let b: AdminBackend
  let n = 0
  beforeEach(async () => {
    b = await openAdminBackend(name)
    await addEndpoint(b, { id: 'ep_1' })
  })
  afterEach(async () => {
    await b?.close()
  })

  const event = (id: string, createdAt: number) => b.run(`INSERT INTO events (id, type, body, created_at) VALUES (?, 't', '{}', ?)`, id, createdAt)
  /** A finished delivery with one attempt, completed at `completedAt`. */
  const finished = async (status: 'success' | 'dead' | 'cancelled', completedAt: number, eventId: string | null = null, notificationId = 'ntf_test'): Promise<string> => {
    const id = `dlv_${String(++n).padStart(5, '0')}`
    await addDelivery(b, { id, endpointId: 'ep_1', status, nextAttemptAt: completedAt, createdAt: completedAt })
    await b.run(`UPDATE deliveries SET completed_at = ?, event_id = ?, notification_id = ? WHERE id = ?`, completedAt, eventId, notificationId, id)
    await b.run(`INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome) VALUES (?, 1, ?, 1, 'x')`, id, completedAt)
    return id
  }
  const notification = (id: string, createdAt: number) =>
    b.run(`INSERT INTO notifications (id, topic, dedup_key, request, recipients, deliveries, created_at) VALUES (?, 't', ?, '{}', 1, 1, ?)`, id, `dk-${id}`, createdAt)
  const ids = async (table: string): Promise<string[]> => (await b.all<{ id: string }>(`SELECT id FROM ${table} ORDER BY id`)).map((r) => r.id)
  const count = async (table: string): Promise<number> => (await b.all<{ n: number }>(`SELECT count(*) AS n FROM ${table}`))[0]!.n

  it.each([1000, 2, 1])('deletes only what has expired, attempts with their deliveries, and events left without deliveries (batch %d)', async (batchSize) => {
    // Ids in creation order, as time-sortable ids are.
    await event('evt_1old_done', NOW - 40 * DAY)
    await event('evt_2old_kept', NOW - 40 * DAY)
    await event('evt_3old_bare', NOW - 8 * DAY)
    await event('evt_4new_bare', NOW - 6 * DAY)
    const oldSuccess = await finished('success', NOW - 7 * DAY - 1, 'evt_1old_done')
    const newSuccess = await finished('success', NOW - 7 * DAY + 1, 'evt_2old_kept')
    const oldDead = await finished('dead', NOW - 30 * DAY - 1)
    const newDead = await finished('dead', NOW - 29 * DAY)
    const oldCancelled = await finished('cancelled', NOW - 31 * DAY)
    const pending = `dlv_pending`
    await addDelivery(b, { id: pending, endpointId: 'ep_1', nextAttemptAt: NOW - 100 * DAY, createdAt: NOW - 100 * DAY })
    const midDead = await finished('dead', NOW - 7 * DAY - 2)
    const olderSuccess = await finished('success', NOW - 7 * DAY - 3)

    const r = await b.sweep({ ...periods, batchSize })
    expect(r).toMatchObject({ deliveries: 4, events: 2, notifications: 0, inboxMessages: 0 })
    const left = await ids('deliveries')
    expect(left).toEqual([newSuccess, newDead, pending, midDead].sort())
    for (const id of [oldSuccess, oldDead, oldCancelled, olderSuccess]) expect(left).not.toContain(id)
    expect((await b.all<{ d: string }>(`SELECT delivery_id AS d FROM attempts ORDER BY delivery_id`)).map((x) => x.d)).toEqual([newSuccess, newDead, midDead].sort())
    expect(await ids('events')).toEqual(['evt_2old_kept', 'evt_4new_bare'])
    expect(await b.sweep(periods)).toMatchObject({ deliveries: 0, events: 0, notifications: 0, inboxMessages: 0 })
  })

  it('works in bounded batches: 25 rows at 10 per batch take 3 transactions', async () => {
    for (let i = 0; i < 25; i++) await finished('success', NOW - 8 * DAY)
    await finished('success', NOW)
    const r = await b.sweep({ ...periods, batchSize: 10 })
    expect(r.deliveries).toBe(25)
    expect(r.batches.deliveries).toBe(3)
    expect(await count('deliveries')).toBe(1)
    expect(await count('attempts')).toBe(1)
  })

  it.each([1000, 2, 1])('deletes old notifications once no delivery refers to them, and stops at the first young one (batch %d)', async (batchSize) => {
    // Ids in creation order, as time-sortable ids are.
    await notification('ntf_1bare', NOW - 7 * DAY - 1)
    await notification('ntf_2pending', NOW - 40 * DAY)
    const p = 'dlv_p'
    await addDelivery(b, { id: p, endpointId: 'ep_1', nextAttemptAt: NOW, createdAt: NOW - 40 * DAY })
    await b.run(`UPDATE deliveries SET notification_id = 'ntf_2pending' WHERE id = ?`, p)
    await notification('ntf_3done', NOW - 10 * DAY)
    await finished('success', NOW - 8 * DAY, null, 'ntf_3done')
    await notification('ntf_4half', NOW - 10 * DAY)
    await finished('success', NOW - 8 * DAY, null, 'ntf_4half')
    await finished('dead', NOW - 8 * DAY, null, 'ntf_4half')
    await notification('ntf_5young', NOW - 7 * DAY + 1)
    // Written by a clock that went back: older than the row before it, so it waits for it.
    await notification('ntf_6behind', NOW - 20 * DAY)
    const r = await b.sweep({ ...periods, batchSize })
    expect(r).toMatchObject({ deliveries: 2, notifications: 2, read: { notifications: 5 } })
    expect(await ids('notifications')).toEqual(['ntf_2pending', 'ntf_4half', 'ntf_5young', 'ntf_6behind'])
    expect(await b.sweep({ ...periods, now: NOW + 1 })).toMatchObject({ notifications: 0 })
    expect(await b.sweep({ ...periods, now: NOW + 2 })).toMatchObject({ notifications: 2 })
    expect(await ids('notifications')).toEqual(['ntf_2pending', 'ntf_4half'])
  })

  it.each([1000, 2, 1])('walks events in creation order and stops at the first young one (batch %d)', async (batchSize) => {
    await event('evt_1old', NOW - 9 * DAY)
    await event('evt_2kept', NOW - 9 * DAY)
    await finished('dead', NOW - DAY, 'evt_2kept')
    await event('evt_3young', NOW - 7 * DAY + 1)
    // Written by a clock that went back: older than the row before it, so it waits for it.
    await event('evt_4behind', NOW - 20 * DAY)
    expect(await b.sweep({ ...periods, batchSize })).toMatchObject({ events: 1, read: { events: 3 } })
    expect(await ids('events')).toEqual(['evt_2kept', 'evt_3young', 'evt_4behind'])
    expect(await b.sweep({ ...periods, now: NOW + 1, batchSize })).toMatchObject({ events: 0 })
    expect(await b.sweep({ ...periods, now: NOW + 2, batchSize })).toMatchObject({ events: 2, read: { events: 3 } })
    expect(await ids('events')).toEqual(['evt_2kept'])
  })

  it('deletes inbox messages older than inboxMs', async () => {
    // seq and unread_after as a message carries them (its two stream events).
    const msg = (id: string, createdAt: number, seq: number) =>
      b.run(`INSERT INTO inbox_messages (id, user_id, topic, title, created_at, seq, unread_after) VALUES (?, 'u1', 't', 'hi', ?, ?, ?)`, id, createdAt, seq, seq)
    await msg('msg_old1', NOW - 91 * DAY, 1)
    await msg('msg_old2', NOW - 90 * DAY - 1, 3)
    await msg('msg_new', NOW - 90 * DAY, 5)
    const r = await b.sweep({ ...periods, batchSize: 1 })
    expect(r).toMatchObject({ inboxMessages: 2, batches: { inboxMessages: 3 } })
    expect(await ids('inbox_messages')).toEqual(['msg_new'])
  })
})
