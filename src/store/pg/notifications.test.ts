import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { NotificationFilter, NewNotificationRow } from '../notifications.js'
import { BACKENDS, type DirectoryBackend } from '../../../test/support/pg-directory-backends.js'

const T0 = Date.UTC(2026, 0, 1)
const row = (id: string, extra: Partial<NewNotificationRow> = {}): NewNotificationRow => ({
  id,
  topic: 'deploy',
  dedupKey: null,
  request: '{"topic":"deploy"}',
  recipients: 2,
  deliveries: 3,
  createdAt: T0,
  ...extra,
})
const ALL: NotificationFilter = { topic: null, appId: null, userId: null, since: null, until: null, after: null, limit: 50 }

describe.each(BACKENDS)('notifications contract on $name', ({ open }) => {
  let b: DirectoryBackend
  beforeAll(async () => {
    b = await open()
  })
  afterAll(() => b.close())
  beforeEach(() => b.reset())

  it('stores a notification with the default application and no tags unless given', async () => {
    const n = b.notifications
    await n.insert(row('ntf_1'))
    await n.insert(row('ntf_2', { appId: 'a1', tags: ['x', 'y'], dedupKey: 'k1' }))
    expect(await n.get('ntf_1')).toEqual({ ...row('ntf_1'), appId: 'default', tags: [] })
    expect(await n.byDedupKey('a1', 'k1')).toEqual({ ...row('ntf_2', { dedupKey: 'k1' }), appId: 'a1', tags: ['x', 'y'] })
    expect(await n.get('ntf_none')).toBeNull()
    expect(await n.byDedupKey('a1', 'none')).toBeNull()
    expect(await n.byDedupKey('default', 'k1')).toBeNull()
    // dedup_key is unique per application: another application may use it, the same one may not.
    await n.insert(row('ntf_3', { dedupKey: 'k1' }))
    expect(await n.byDedupKey('default', 'k1')).toMatchObject({ id: 'ntf_3', appId: 'default' })
    await expect(n.insert(row('ntf_4', { appId: 'a1', dedupKey: 'k1' }))).rejects.toThrow(/unique/i)
    expect(await n.get('ntf_4')).toBeNull()
  })

  it('lists newest id first with each filter, and pages after an id', async () => {
    const n = b.notifications
    for (let i = 1; i <= 6; i++) await n.insert(row(`ntf_${i}`, { topic: i % 2 ? 'odd' : 'even', appId: i > 4 ? 'a2' : 'default', createdAt: T0 + i }))
    const ids = async (f: Partial<NotificationFilter>) => (await n.list({ ...ALL, ...f })).map((r) => r.id)
    expect(await ids({})).toEqual(['ntf_6', 'ntf_5', 'ntf_4', 'ntf_3', 'ntf_2', 'ntf_1'])
    expect(await ids({ limit: 2, after: 'ntf_5' })).toEqual(['ntf_4', 'ntf_3'])
    expect(await ids({ topic: 'odd' })).toEqual(['ntf_5', 'ntf_3', 'ntf_1'])
    expect(await ids({ appId: 'a2' })).toEqual(['ntf_6', 'ntf_5'])
    expect(await ids({ since: T0 + 2, until: T0 + 4 })).toEqual(['ntf_3', 'ntf_2'])
    // A recipient's notifications: a delivery to them, or a suppression of them.
    await b.addDelivery({ id: 'dlv_1', notificationId: 'ntf_2', recipient: 'u1', channel: 'inbox', status: 'pending' })
    await b.receipts.suppress('ntf_4', [{ recipient: 'u1', channel: 'email', reason: 'no_address' }], T0)
    await b.receipts.suppress('ntf_5', [{ recipient: 'u2', channel: 'email', reason: 'no_address' }], T0)
    expect(await ids({ userId: 'u1' })).toEqual(['ntf_4', 'ntf_2'])
    expect(await ids({ userId: 'u1', topic: 'odd' })).toEqual([])
  })
})
