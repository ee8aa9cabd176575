import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../src/lib/clock.js'
import { Postbox } from '../src/postbox.js'
import { tempDir } from './helpers.js'
import { startReceiver, type Receiver } from './support/receiver.js'

const YEAR = 365 * 86_400_000
const NOW = Date.UTC(2026, 10, 30, 12)

describe('a clock that was years ahead, then corrected', () => {
  let dir: string
  let cleanup: () => void
  let receiver: Receiver
  let pb: Postbox | null = null
  beforeEach(async () => {
    ;({ dir, cleanup } = tempDir('postbox-clock-'))
    receiver = await startReceiver()
  })
  afterEach(async () => {
    await pb?.close()
    await receiver.close()
    cleanup()
  })

  it('leaves no delivery or breaker pause years out: the hourly maintenance makes them due now (not the start, which may precede NTP)', async () => {
    const db = join(dir, 'postbox.db')
    // Written while the clock read 2031: an event, and a breaker pause ending in 2031.
    const ahead = new ManualClock(NOW + 5 * YEAR)
    pb = await Postbox.open({ db, allowNetworks: ['127.0.0.0/8'], clock: ahead })
    const ep = await pb.endpoints.create({ url: `${receiver.url}/hooks` })
    const ev = await pb.events.send({ type: 'user.created', data: { id: 'u_1' } })
    await pb.store.endpoints.pause(ep.id, ahead.now() + 60_000)
    await pb.close()

    // Corrected: without the repair, the row and the pause would wait five years.
    pb = await Postbox.open({ db, allowNetworks: ['127.0.0.0/8'], clock: new ManualClock(NOW) })
    expect((await pb.store.deliveries.byEvent(ev.id))[0]!.nextAttemptAt).toBe(NOW + 5 * YEAR)
    pb.start()
    expect((await pb.store.deliveries.byEvent(ev.id))[0]!.nextAttemptAt).toBe(NOW + 5 * YEAR)
    await pb.maintain()
    const [req] = await receiver.waitFor(1, 3000)
    expect(JSON.parse(req!.body)).toMatchObject({ id: ev.id })
    expect((await pb.store.endpoints.get(ep.id))!.pausedUntil).toBe(NOW)
  })
})
