/**
 * Finding 7 of issue #36 (last item): an orphaned notification-webhook row waited ~100 s after a
 * kill -9, where docs/delivery.md says its request timeout + 30 s: rows without an endpoint all
 * leased for the longest channel timeout (email's). Each channel's rows now lease for their own
 * timeout (ClaimOptions.channelTimeoutsMs, given by the dispatcher). Both backends.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { LEASE_MARGIN_MS } from '../src/store/deliveries.js'
import { notifyHarness, type NotifyHarness } from './notify-harness.js'

let h: NotifyHarness | undefined
afterEach(async () => {
  await h?.cleanup()
  h = undefined
})

describe('the claim lease of rows without an endpoint', () => {
  it('is their channel’s own timeout + the margin; a channel without one takes the default', async () => {
    h = await notifyHarness()
    const now = h.clock.now()
    await h.store.tx(async (s) => {
      for (const channel of ['notify-webhook', 'email'] as const) {
        await s.deliveries.enqueue({ channel, notificationId: `ntf_${channel}`, recipient: 'u1', eventType: 't', maxAttempts: 3, nextAttemptAt: now }, now)
      }
    })
    const claimed = await h.store.deliveries.claimDue({ limit: 10, now, defaultTimeoutMs: 70_000, channelTimeoutsMs: { 'notify-webhook': 5_000 } })
    const leaseOf = (channel: string) => claimed.find((d) => d.channel === channel)!.leaseUntil
    expect(leaseOf('notify-webhook')).toBe(now + 5_000 + LEASE_MARGIN_MS)
    expect(leaseOf('email')).toBe(now + 70_000 + LEASE_MARGIN_MS)
    const row = await h.store.deliveries.get(claimed.find((d) => d.channel === 'notify-webhook')!.id)
    expect(row).toMatchObject({ status: 'in_flight' })
  })
})
