import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createRetentionRunner, storeRetention, sweepRetention, sweepRetentionAsync } from './retention.js'
import { type RetentionOptions } from '../retention.js'
import { createInboxStore } from './inbox.js'
import { createNotificationsStore } from './notifications.js'
import { insertEndpoint, openTestQueue, row, type TestQueue } from '../../../test/queue-helpers.js'
import { tempStore } from '../../../test/helpers.js'

const HOUR = 3_600_000
const DAY = 86_400_000
const NOW = Date.UTC(2026, 3, 1)
const periods: RetentionOptions = { now: NOW, successMs: 7 * DAY, deadMs: 30 * DAY, inboxMs: 90 * DAY, eventsMs: 7 * DAY }

let q: TestQueue
beforeEach(() => {
  q = openTestQueue()
  insertEndpoint(q.db, { id: 'ep_1' })
})
afterEach(() => q.cleanup())

function event(id: string, createdAt: number): void {
  q.db.prepare(`INSERT INTO events (id, type, body, created_at) VALUES (?, 't', '{}', ?)`).run(id, createdAt)
}

/** A finished delivery with one attempt, completed at `completedAt`. */
function finished(key: string, status: 'success' | 'dead' | 'cancelled', completedAt: number, eventId: string | null = null, endpointId = 'ep_1'): string {
  const { id } = q.deliveries.enqueue(row(key, completedAt, { eventId, endpointId }), completedAt)
  q.db.prepare(`UPDATE deliveries SET status = ?, completed_at = ? WHERE id = ?`).run(status, completedAt, id)
  q.db.prepare(`INSERT INTO attempts (delivery_id, attempt, started_at, duration_ms, outcome) VALUES (?, 1, ?, 1, 'x')`).run(id, completedAt)
  return id
}

/** A notification row as the pipeline writes it, with a request of `requestBytes` characters. */
function notification(id: string, createdAt: number, requestBytes = 20): void {
  const request = JSON.stringify({ topic: 't', pad: 'x'.repeat(requestBytes) })
  createNotificationsStore(q.db).insert({ id, topic: 't', dedupKey: `dk-${id}`, request, recipients: 1, deliveries: 1, createdAt })
}

/** A delivery of notification `ntf` to `recipient`, pending, or finished at `at`. */
function notified(ntf: string, recipient: string, status: 'pending' | 'success' | 'dead', at: number): string {
  const { id } = q.deliveries.enqueue(row(recipient, at, { notificationId: ntf, endpointId: 'ep_1' }), at)
  if (status !== 'pending') q.db.prepare(`UPDATE deliveries SET status = ?, completed_at = ? WHERE id = ?`).run(status, at, id)
  return id
}

function inbox(id: string, userId: string, createdAt: number, state: { read?: boolean; archived?: boolean } = {}): void {
  q.db
    .prepare(`INSERT INTO inbox_messages (id, user_id, topic, title, read, archived, created_at) VALUES (?, ?, 't', 'hi', ?, ?, ?)`)
    .run(id, userId, state.read ? 1 : 0, state.archived ? 1 : 0, createdAt)
  // The insert trigger counts it (schema.sql: inbox_counts_insert).
}

const count = (table: string): number => q.db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number
const notificationIds = (): string[] => q.db.prepare(`SELECT id FROM notifications ORDER BY id`).pluck().all() as string[]
const unread = (userId: string): number =>
  q.db.prepare(`SELECT unread_count FROM inbox_counters WHERE user_id = ?`).pluck().get(userId) as number
const exactUnread = (userId: string): number =>
  q.db.prepare(`SELECT count(*) FROM inbox_messages WHERE user_id = ? AND read = 0 AND archived = 0`).pluck().get(userId) as number

describe('sweepRetention', () => {
  it.each([1000, 2, 1])('deletes only what has expired, attempts with their deliveries, and events left without deliveries (batch %d)', (batchSize) => {
    event('evt_old_done', NOW - 40 * DAY)
    event('evt_old_kept', NOW - 40 * DAY)
    event('evt_old_bare', NOW - 8 * DAY)
    event('evt_new_bare', NOW - 6 * DAY)
    const oldSuccess = finished('s-old', 'success', NOW - 7 * DAY - 1, 'evt_old_done')
    const newSuccess = finished('s-new', 'success', NOW - 7 * DAY + 1, 'evt_old_kept')
    const oldDead = finished('d-old', 'dead', NOW - 30 * DAY - 1)
    const newDead = finished('d-new', 'dead', NOW - 29 * DAY)
    const oldCancelled = finished('c-old', 'cancelled', NOW - 31 * DAY)
    const pending = q.deliveries.enqueue(row('p', NOW - 100 * DAY, { endpointId: 'ep_1' }), NOW - 100 * DAY).id

    // A dead row younger than deadMs sits between the expired successes in completed_at order.
    const midDead = finished('d-mid', 'dead', NOW - 7 * DAY - 2)
    const olderSuccess = finished('s-older', 'success', NOW - 7 * DAY - 3)
    const r = sweepRetention(q, { ...periods, batchSize })
    expect(r).toMatchObject({ deliveries: 4, events: 2, inboxMessages: 0 })
    expect(q.deliveries.get(midDead)).not.toBeNull()
    expect(q.deliveries.get(olderSuccess)).toBeNull()
    for (const id of [oldSuccess, oldDead, oldCancelled]) expect(q.deliveries.get(id)).toBeNull()
    for (const id of [newSuccess, newDead, pending]) expect(q.deliveries.get(id)).not.toBeNull()
    expect(q.db.prepare(`SELECT delivery_id FROM attempts ORDER BY delivery_id`).pluck().all()).toEqual([newSuccess, newDead, midDead].sort())
    expect(q.db.prepare(`SELECT id FROM events ORDER BY id`).pluck().all()).toEqual(['evt_new_bare', 'evt_old_kept'])
    expect(sweepRetention(q, periods)).toMatchObject({ deliveries: 0, events: 0, inboxMessages: 0 })
  })

  it('works in bounded batches: 2,500 rows at 1,000 per batch take 3 transactions', () => {
    q.db.transaction(() => {
      for (let i = 0; i < 2_500; i++) finished(`s${i}`, 'success', NOW - 8 * DAY)
    })()
    finished('keep', 'success', NOW)
    const r = sweepRetention(q, { ...periods, batchSize: 1000 })
    expect(r.deliveries).toBe(2_500)
    expect(r.batches.deliveries).toBe(3)
    expect(count('deliveries')).toBe(1)
    expect(count('attempts')).toBe(1)
  })

  it('reads at most 4 × batchSize rows per transaction, however many kept rows come first', () => {
    // 50 dead rows that must stay (younger than deadMs) sit before 4 expired successes.
    q.db.transaction(() => {
      for (let i = 0; i < 50; i++) finished(`d${i}`, 'dead', NOW - 20 * DAY + i)
      for (let i = 0; i < 4; i++) finished(`s${i}`, 'success', NOW - 10 * DAY + i)
      for (let i = 0; i < 30; i++) event(`evt_kept${String(i).padStart(2, '0')}`, NOW - 20 * DAY + i)
      for (let i = 0; i < 30; i++) finished(`e${i}`, 'dead', NOW - DAY, `evt_kept${String(i).padStart(2, '0')}`)
      event('evt_free', NOW - 10 * DAY)
    })()
    const r = sweepRetention(q, { ...periods, batchSize: 5 })
    expect(r).toMatchObject({ deliveries: 4, events: 1 })
    // Windows of 20: 20 + 20 + 10 kept dead rows, the successes in the third; 20 + 10 kept events.
    expect(r.batches).toMatchObject({ deliveries: 3, events: 2 })
    expect(count('deliveries')).toBe(80)
  })

  it.each([1000, 2, 1])('walks events in insertion order and stops at the first young one (batch %d)', (batchSize) => {
    const eventIds = (): string[] => q.db.prepare(`SELECT id FROM events ORDER BY rowid`).pluck().all() as string[]
    event('evt_c_old', NOW - 9 * DAY)
    event('evt_b_kept', NOW - 9 * DAY)
    finished('e-kept', 'dead', NOW - DAY, 'evt_b_kept')
    event('evt_a_young', NOW - 7 * DAY + 1)
    // Written by a clock that went back: older than the row before it, so it waits for it.
    event('evt_0_behind', NOW - 20 * DAY)
    expect(sweepRetention(q, { ...periods, batchSize })).toMatchObject({ events: 1, read: { events: 3 } })
    expect(eventIds()).toEqual(['evt_b_kept', 'evt_a_young', 'evt_0_behind'])
    // Exactly at the cutoff is not old enough.
    expect(sweepRetention(q, { ...periods, now: NOW + 1, batchSize })).toMatchObject({ events: 0 })
    expect(sweepRetention(q, { ...periods, now: NOW + 2, batchSize })).toMatchObject({ events: 2, read: { events: 3 } })
    expect(eventIds()).toEqual(['evt_b_kept'])
  })

  it.each([1000, 2, 1])('deletes old notifications once no delivery refers to them, and stops at the first young one (batch %d)', (batchSize) => {
    notification('ntf_bare', NOW - 7 * DAY - 1)
    notification('ntf_pending', NOW - 40 * DAY)
    notified('ntf_pending', 'u1', 'pending', NOW - 40 * DAY)
    // Its last delivery expires in this sweep, which then deletes it.
    notification('ntf_done', NOW - 10 * DAY, 100_000)
    notified('ntf_done', 'u1', 'success', NOW - 8 * DAY)
    notification('ntf_half', NOW - 10 * DAY)
    notified('ntf_half', 'u1', 'success', NOW - 8 * DAY)
    notified('ntf_half', 'u2', 'dead', NOW - 8 * DAY)
    notification('ntf_young', NOW - 7 * DAY + 1)
    // Written by a clock that went back: older than the row before it, so it waits for it.
    notification('ntf_behind', NOW - 20 * DAY)
    const r = sweepRetention(q, { ...periods, batchSize })
    expect(r).toMatchObject({ deliveries: 2, notifications: 2, read: { notifications: 5 } })
    expect(notificationIds()).toEqual(['ntf_behind', 'ntf_half', 'ntf_pending', 'ntf_young'])
    // Exactly at the cutoff is not old enough.
    expect(sweepRetention(q, { ...periods, now: NOW + 1 })).toMatchObject({ notifications: 0 })
    expect(sweepRetention(q, { ...periods, now: NOW + 2 })).toMatchObject({ notifications: 2 })
    expect(notificationIds()).toEqual(['ntf_half', 'ntf_pending'])
  })

  it('walks notifications in bounded batches, reading at most 4 × batchSize rows per transaction', () => {
    q.db.transaction(() => {
      for (let i = 0; i < 2_500; i++) notification(`ntf_${i}`, NOW - 8 * DAY)
    })()
    notification('ntf_keep', NOW)
    const big = sweepRetention(q, { ...periods, batchSize: 1000 })
    expect(big).toMatchObject({ notifications: 2_500, batches: { notifications: 3 } })
    expect(notificationIds()).toEqual(['ntf_keep'])

    // 50 kept by their deliveries, then 4 to delete (and ntf_keep, now old): windows of 20.
    q.db.transaction(() => {
      for (let i = 0; i < 50; i++) {
        notification(`ntf_kept${i}`, NOW - 20 * DAY + i)
        notified(`ntf_kept${i}`, 'u1', 'pending', NOW - 20 * DAY)
      }
      for (let i = 0; i < 4; i++) notification(`ntf_free${i}`, NOW - 10 * DAY)
    })()
    const r = sweepRetention(q, { ...periods, now: NOW + 7 * DAY + 1, batchSize: 5 })
    expect(r).toMatchObject({ notifications: 5, batches: { notifications: 3 }, read: { notifications: 55 } })
    expect(count('notifications')).toBe(50)
  })

  it('keeps the unread counter exact when old inbox messages go', async () => {
    for (let i = 0; i < 5; i++) inbox(`msg_a_old${i}`, 'alice', NOW - 91 * DAY)
    inbox('msg_a_read', 'alice', NOW - 91 * DAY, { read: true })
    inbox('msg_a_arch', 'alice', NOW - 91 * DAY, { archived: true })
    inbox('msg_a_new', 'alice', NOW - 1 * DAY)
    inbox('msg_b_old', 'bob', NOW - 100 * DAY)
    inbox('msg_b_new', 'bob', NOW)
    expect(unread('alice')).toBe(6)

    const inboxStore = createInboxStore(q.db)
    const told: [string, number][] = []
    const onStreamEvents = (userId: string, events: { data: Record<string, unknown> }[]): void => {
      for (const e of events) told.push([userId, e.data.unread_count as number])
    }
    const r = await sweepRetentionAsync({ db: q.db, inbox: inboxStore }, { ...periods, batchSize: 3, onStreamEvents })
    expect(r.inboxMessages).toBe(8)
    expect(r.batches.inboxMessages).toBe(3)
    expect(q.db.prepare(`SELECT id FROM inbox_messages ORDER BY id`).pluck().all()).toEqual(['msg_a_new', 'msg_b_new'])
    for (const user of ['alice', 'bob']) expect(unread(user)).toBe(exactUnread(user))
    expect(unread('alice')).toBe(1)
    // Each committed batch told the live streams, and logged the count for a later replay.
    expect(told.filter(([u]) => u === 'alice').at(-1)).toEqual(['alice', 1])
    expect(told.filter(([u]) => u === 'bob')).toEqual([['bob', 1]])
    const replayed = inboxStore.replay('alice', 0).filter((e) => e.kind === 'unread_count')
    expect(replayed.at(-1)!.data).toEqual({ unread_count: 1 })
  })
})

describe('createRetentionRunner', () => {
  const at = (now: number, batchSize = 5): RetentionOptions => ({ ...periods, now, batchSize })
  const exists = (id: string): boolean => q.deliveries.get(id) !== null
  const eventExists = (id: string): boolean => q.db.prepare(`SELECT 1 FROM events WHERE id = ?`).get(id) !== undefined

  /** 50 dead rows the success walk passes over, and 30 old events kept by their deliveries. */
  function kept(): void {
    q.db.transaction(() => {
      for (let i = 0; i < 50; i++) finished(`d${i}`, 'dead', NOW - 20 * DAY + i)
      for (let i = 0; i < 30; i++) {
        const id = `evt_kept${String(i).padStart(2, '0')}`
        event(id, NOW - 20 * DAY + i)
        finished(`e${i}`, 'dead', NOW - DAY, id)
      }
    })()
  }

  it('starts a sweep where the previous one stopped, so kept rows are read once', () => {
    kept()
    for (let i = 0; i < 4; i++) finished(`s${i}`, 'success', NOW - 10 * DAY + i)
    // Expires between the two sweeps.
    const next = finished('s-next', 'success', NOW - 7 * DAY + HOUR / 2)
    const runner = createRetentionRunner(q)
    const first = runner.sweep(at(NOW))
    expect(first).toMatchObject({ deliveries: 4, events: 0, full: true, read: { deliveries: 54, events: 30 } })
    const second = runner.sweep(at(NOW + HOUR))
    expect(second).toMatchObject({ deliveries: 1, events: 0, full: false, read: { deliveries: 1, events: 0 } })
    expect(exists(next)).toBe(false)
    expect(runner.sweep(at(NOW + 2 * HOUR))).toMatchObject({ deliveries: 0, full: false, read: { deliveries: 0, events: 0 } })
    // A sweep without a runner reads them all again.
    expect(sweepRetention(q, at(NOW + 2 * HOUR))).toMatchObject({ full: true, read: { deliveries: 50, events: 30 } })
  })

  it('still deletes rows finished after a sweep, and events their deliveries leave bare', () => {
    kept()
    const redelivered = finished('d-again', 'dead', NOW - 20 * DAY - 1)
    event('evt_dead', NOW - 20 * DAY)
    const deadWithEvent = finished('d-evt', 'dead', NOW - 20 * DAY, 'evt_dead')
    // An event that loses one of its two deliveries stays.
    event('evt_two', NOW - 20 * DAY)
    finished('d-two-old', 'dead', NOW - 20 * DAY, 'evt_two')
    const runner = createRetentionRunner(q, { fullWalkEveryMs: 365 * DAY })
    expect(runner.sweep(at(NOW))).toMatchObject({ deliveries: 0, events: 0, full: true })
    // After the sweep: a success, and a dead row redelivered that dies again.
    const success = finished('s-late', 'success', NOW + HOUR)
    expect(q.deliveries.redeliver(redelivered, NOW + HOUR)).toBe('ok')
    q.db.prepare(`UPDATE deliveries SET status = 'dead', completed_at = ? WHERE id = ?`).run(NOW + HOUR, redelivered)
    insertEndpoint(q.db, { id: 'ep_2' })
    const later = finished('d-two-new', 'dead', NOW + 2 * DAY, 'evt_two', 'ep_2')

    expect(runner.sweep(at(NOW + 7 * DAY + 2 * HOUR))).toMatchObject({ deliveries: 1, events: 0, full: false })
    expect(exists(success)).toBe(false)
    expect(exists(redelivered)).toBe(true)
    // The events walk passed evt_dead a month ago; its delivery going releases it all the same.
    const last = runner.sweep(at(NOW + 31 * DAY + 2 * HOUR))
    expect(last).toMatchObject({ deliveries: 83, events: 31, full: false, read: { events: 0 } })
    // The events went with their deliveries, and no transaction deleted more than 5 rows of the two.
    expect(last.batches.deliveries).toBeGreaterThanOrEqual(Math.ceil((83 + 31) / 5))
    expect(exists(redelivered)).toBe(false)
    expect(exists(deadWithEvent)).toBe(false)
    expect(eventExists('evt_dead')).toBe(false)
    expect(q.db.prepare(`SELECT id FROM deliveries`).pluck().all()).toEqual([later])
    expect(q.db.prepare(`SELECT id FROM events`).pluck().all()).toEqual(['evt_two'])
  })

  it('deletes a notification the walk passed in the batch that deletes its last delivery', () => {
    notification('ntf_a', NOW - 10 * DAY)
    notified('ntf_a', 'u1', 'dead', NOW - DAY)
    notification('ntf_b', NOW - 10 * DAY)
    notified('ntf_b', 'u1', 'dead', NOW - DAY)
    notified('ntf_b', 'u2', 'pending', NOW - DAY)
    notification('ntf_young', NOW - DAY)
    notified('ntf_young', 'u1', 'success', NOW - DAY)
    const runner = createRetentionRunner(q, { fullWalkEveryMs: 365 * DAY })
    expect(runner.sweep(at(NOW))).toMatchObject({ notifications: 0, full: true, read: { notifications: 3 } })
    // ntf_a and ntf_b are behind the walk's position; their dead deliveries expire. ntf_young,
    // ahead of it, is left to the walk.
    const r = runner.sweep(at(NOW + 30 * DAY))
    expect(r).toMatchObject({ deliveries: 3, notifications: 2, full: false, read: { notifications: 1 } })
    // ntf_b still has its pending delivery; ntf_young was deleted by the walk, ntf_a with its delivery.
    expect(notificationIds()).toEqual(['ntf_b'])
  })

  it('keeps deletions and releases within batchSize rows per transaction', () => {
    q.db.transaction(() => {
      for (let i = 0; i < 20; i++) {
        notification(`ntf_${i}`, NOW - 10 * DAY)
        notified(`ntf_${i}`, 'u1', 'dead', NOW - DAY)
      }
    })()
    const runner = createRetentionRunner(q, { fullWalkEveryMs: 365 * DAY })
    expect(runner.sweep(at(NOW))).toMatchObject({ notifications: 0, read: { notifications: 20 } })
    const r = runner.sweep(at(NOW + 30 * DAY))
    expect(r).toMatchObject({ deliveries: 20, notifications: 20, full: false })
    // At most three deliveries and their three notifications per transaction: never over 5 rows.
    expect(r.batches.deliveries).toBeGreaterThanOrEqual(Math.ceil((20 + 20) / 5))
  })

  it.each([
    ['notifications', notification],
    ['events', event],
  ] as const)('does not pass new %s that reuse rowids of deleted ones', (family, add) => {
    for (let i = 0; i < 3; i++) add(`x_old${i}`, NOW - 10 * DAY)
    const runner = createRetentionRunner(q, { fullWalkEveryMs: 365 * DAY })
    expect(runner.sweep(at(NOW))).toMatchObject({ [family]: 3, full: true })
    // The table is empty, so this one gets rowid 1 again.
    add('x_new', NOW + HOUR)
    expect(runner.sweep(at(NOW + 7 * DAY))).toMatchObject({ [family]: 0, full: false, read: { [family]: 1 } })
    expect(runner.sweep(at(NOW + 8 * DAY))).toMatchObject({ [family]: 1, full: false })
    expect(count(family)).toBe(0)
  })

  /** A success row written by a writer whose clock lagged: it lands before the walk's position. */
  function lagging(runner: ReturnType<typeof createRetentionRunner>, now: number): string {
    finished('d-kept', 'dead', NOW - 7 * DAY - HOUR)
    expect(runner.sweep(at(now))).toMatchObject({ full: true, read: { deliveries: 1 } })
    return finished('s-lagging', 'success', NOW - 8 * DAY)
  }

  it('walks from the beginning when now goes backwards', () => {
    const runner = createRetentionRunner(q)
    const id = lagging(runner, NOW)
    expect(runner.sweep(at(NOW + HOUR))).toMatchObject({ deliveries: 0, full: false, read: { deliveries: 0 } })
    expect(exists(id)).toBe(true)
    expect(runner.sweep(at(NOW + HOUR / 2))).toMatchObject({ deliveries: 1, full: true, read: { deliveries: 2 } })
    expect(exists(id)).toBe(false)
  })

  it('walks from the beginning once a day, and when a window changes', () => {
    const runner = createRetentionRunner(q)
    const id = lagging(runner, NOW)
    expect(runner.sweep(at(NOW + 23 * HOUR))).toMatchObject({ deliveries: 0, full: false })
    expect(exists(id)).toBe(true)
    expect(runner.sweep(at(NOW + DAY))).toMatchObject({ deliveries: 1, full: true, read: { deliveries: 2 } })
    expect(exists(id)).toBe(false)
    expect(runner.sweep(at(NOW + DAY + HOUR))).toMatchObject({ full: false })
    expect(runner.sweep({ ...at(NOW + DAY + 2 * HOUR), deadMs: 40 * DAY })).toMatchObject({ full: true })
  })

  it('walks from the beginning after a sweep that failed', async () => {
    kept()
    inbox('msg_old', 'alice', NOW - 91 * DAY)
    const runner = createRetentionRunner({ db: q.db, inbox: createInboxStore(q.db) })
    expect(runner.sweep(at(NOW))).toMatchObject({ full: true, inboxMessages: 1 })
    inbox('msg_old2', 'alice', NOW - 91 * DAY)
    const fail = (): void => {
      throw new Error('stream gone')
    }
    await expect(runner.sweepAsync({ ...at(NOW + HOUR), onStreamEvents: fail })).rejects.toThrow('stream gone')
    expect(runner.sweep(at(NOW + 2 * HOUR))).toMatchObject({ full: true, read: { deliveries: 50, events: 30 } })
    expect(runner.sweep(at(NOW + 3 * HOUR))).toMatchObject({ full: false, read: { deliveries: 0, events: 0 } })
  })

  it('sweeps asynchronously from the same positions', async () => {
    kept()
    const runner = createRetentionRunner(q)
    expect(await runner.sweepAsync(at(NOW))).toMatchObject({ full: true, read: { deliveries: 50, events: 30 } })
    expect(runner.sweep(at(NOW + HOUR))).toMatchObject({ full: false, read: { deliveries: 0, events: 0 } })
    expect(await runner.sweepAsync(at(NOW + 2 * HOUR))).toMatchObject({ full: false, read: { deliveries: 0, events: 0 } })
  })
})

describe('storeRetention (the server\'s sweep over the asynchronous Store)', () => {
  it('runs each batch in a Store transaction of its own: it waits for an open one, and never lands inside it', async () => {
    const t = tempStore()
    try {
      const db = t.store.sqlite!.db
      insertEndpoint(db, { id: 'ep_1' })
      const old = NOW - 40 * DAY
      db.prepare(`INSERT INTO deliveries (id, channel, endpoint_id, recipient, notification_id, event_type, status, attempts, max_attempts, next_attempt_at, created_at, updated_at, completed_at)
        VALUES ('dlv_old', 'webhook', 'ep_1', 'r', 'ntf_x', 't', 'success', 1, 8, ?, ?, ?, ?)`).run(old, old, old, old)
      const runner = createRetentionRunner(storeRetention(t.store))
      let release!: () => void
      const held = new Promise<void>((r) => (release = r))
      const seen: string[] = []
      // A transaction that stays open across turns, as a service's does while it awaits its calls.
      const open = t.store.tx(async (s) => {
        await s.endpoints.get('ep_1')
        await held
        seen.push(`tx sees ${db.prepare(`SELECT count(*) FROM deliveries`).pluck().get() as number}`)
        throw new Error('rolled back')
      })
      const sweep = runner.sweepAsync(periods).then((r) => {
        seen.push(`swept ${r.deliveries}`)
        return r
      })
      await new Promise((r) => setTimeout(r, 20))
      release()
      await expect(open).rejects.toThrow('rolled back')
      // The rollback took nothing of the sweep with it: the sweep ran after it, in its own transaction.
      expect((await sweep).deliveries).toBe(1)
      expect(seen).toEqual(['tx sees 1', 'swept 1'])
      expect(db.prepare(`SELECT count(*) FROM deliveries`).pluck().get()).toBe(0)
    } finally {
      await t.cleanup()
    }
  })
})
