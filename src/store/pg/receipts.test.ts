import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { NewNotificationRow } from '../notifications.js'
import { BACKENDS, type DirectoryBackend } from '../../../test/support/pg-directory-backends.js'

const T0 = Date.UTC(2026, 0, 1)
const row = (id: string): NewNotificationRow => ({ id, topic: 'deploy', dedupKey: null, request: '{}', recipients: 1, deliveries: 1, createdAt: T0 })

describe.each(BACKENDS)('receipts contract on $name', ({ open }) => {
  let b: DirectoryBackend
  beforeAll(async () => {
    b = await open()
  })
  afterAll(() => b.close())
  beforeEach(() => b.reset())

  it("gives each delivery with its suppression and engagement, then the suppressions without one", async () => {
    const r = b.receipts
    await b.addDelivery({ id: 'dlv_i', notificationId: 'ntf_1', recipient: 'u2', channel: 'inbox', status: 'success', completedAt: T0 + 1 })
    await b.addDelivery({ id: 'dlv_e', notificationId: 'ntf_1', recipient: 'u1', channel: 'email', status: 'pending' })
    await b.addDelivery({ id: 'dlv_o', notificationId: 'ntf_2', recipient: 'u1', channel: 'email', status: 'pending' })
    await r.suppress('ntf_1', [], T0)
    await r.suppress(
      'ntf_1',
      [
        { recipient: 'u3', channel: 'email', reason: 'no_address' },
        { recipient: 'u1', channel: 'email', reason: 'digested' },
        { recipient: 'u0', channel: 'inbox', reason: 'preference_disabled' },
      ],
      T0,
    )
    // A repeat is ignored.
    await r.suppress('ntf_1', [{ recipient: 'u3', channel: 'email', reason: 'channel_not_configured' }], T0)
    expect(await r.suppressedCount('ntf_1')).toBe(3)
    expect(await r.suppressedCount('ntf_2')).toBe(0)
    const m = (
      await b.inbox.insertMessage(
        { userId: 'u2', notificationId: 'ntf_1', deliveryId: 'dlv_i', topic: 't', title: 't', body: '', severity: 'info', actionUrl: null, payload: null },
        T0,
      )
    ).message
    await b.inbox.changeState('u2', null, [m.id], 'read', T0 + 2)
    await r.click('ntf_1', 'u1', T0 + 3)
    await r.click('ntf_1', 'u1', T0 + 4)
    const none = { seenAt: null, readAt: null, clickedAt: null, archivedAt: null }
    expect(await r.receipts('ntf_1', 10)).toEqual([
      { recipient: 'u1', channel: 'email', deliveryId: 'dlv_e', status: 'pending', lastError: null, completedAt: null, reason: 'digested', ...none, clickedAt: T0 + 3 },
      { recipient: 'u2', channel: 'inbox', deliveryId: 'dlv_i', status: 'success', lastError: null, completedAt: T0 + 1, reason: null, ...none, seenAt: T0 + 2, readAt: T0 + 2 },
      { recipient: 'u0', channel: 'inbox', deliveryId: null, status: 'suppressed', lastError: null, completedAt: null, reason: 'preference_disabled', ...none },
      { recipient: 'u3', channel: 'email', deliveryId: null, status: 'suppressed', lastError: null, completedAt: null, reason: 'no_address', ...none },
    ])
    expect((await r.receipts('ntf_1', 3)).map((x) => x.recipient)).toEqual(['u1', 'u2', 'u0'])
    expect(await r.hasDelivery('ntf_1', 'u2', 'inbox')).toBe(true)
    expect(await r.hasDelivery('ntf_1', 'u2', 'email')).toBe(false)
  })

  it('removes a notification with its suppressions and clicks', async () => {
    await b.notifications.insert(row('ntf_1'))
    await b.notifications.insert(row('ntf_2'))
    for (const id of ['ntf_1', 'ntf_2']) {
      await b.receipts.suppress(id, [{ recipient: 'u1', channel: 'email', reason: 'no_address' }], T0)
      await b.receipts.click(id, 'u1', T0)
    }
    await b.exec(`DELETE FROM notifications WHERE id = 'ntf_1'`)
    expect(await b.receipts.suppressedCount('ntf_1')).toBe(0)
    expect(await b.receipts.suppressedCount('ntf_2')).toBe(1)
    expect(await b.receipts.receipts('ntf_1', 10)).toEqual([])
  })
})
