/**
 * Finding 5 of issue #36: a durable request in flight when its application was deleted kept
 * being retried (4 more attempts); a webhook delivery in that position ends `cancelled`. The
 * attempt on the wire is logged, and the request then ends `cancelled` with `app_deleted`.
 * Both backends (requests*.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'
import { startReceiver, type Receiver } from './support/receiver.js'

let f: ApiFixture | null = null
let rx: Receiver | null = null
afterEach(async () => {
  await f?.close()
  await rx?.close()
  f = null
  rx = null
})

describe('deleting an application while its request is in flight', () => {
  it('ends the request cancelled (app_deleted) after the attempt on the wire, never retried', async () => {
    let arrived!: () => void
    const onWire = new Promise<void>((resolve) => (arrived = resolve))
    let answer!: () => void
    const answered = new Promise<void>((resolve) => (answer = resolve))
    // The first attempt is held until the application is deleted, then fails with a retryable 503.
    rx = await startReceiver(async () => {
      arrived()
      await answered
      return { status: 503, body: 'down' }
    })
    f = await apiFixture({ pollIntervalMs: 20 })
    f.pb.start()
    await f.json('POST', '/v1/apps', { body: { id: 'gone', name: 'gone' } })
    const r = await f.json('POST', '/v1/requests', { body: { url: rx.url, app_id: 'gone', retry_schedule: ['10ms', '10ms', '10ms', '10ms'] } })
    expect(r.status).toBe(202)
    await onWire
    expect((await f.json('GET', `/v1/requests/${r.body.id}`)).body.status).toBe('in_flight')
    const del = await f.json('DELETE', '/v1/apps/gone')
    expect(del).toMatchObject({ status: 200, body: { cancelled: 0 } })
    answer()
    let req: { status: string } & Record<string, unknown> = { status: 'in_flight' }
    // Proved by state: the row leaves in_flight once its attempt is settled.
    for (let i = 0; i < 500 && req.status === 'in_flight'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      req = (await f.json('GET', `/v1/requests/${r.body.id}`)).body
    }
    expect(req).toMatchObject({ status: 'cancelled', last_error: 'app_deleted', attempt_count: 1 })
    expect(req.attempts).toMatchObject([{ status_code: 503 }])
    expect(rx.requests).toHaveLength(1)
  })
})
