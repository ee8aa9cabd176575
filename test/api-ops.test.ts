import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { apiFixture, type ApiFixture } from './support/api.js'
import { runSql } from './support/backend.js'

describe('operations routes', () => {
  let f: ApiFixture
  afterEach(async () => f.close())

  describe('default config', () => {
    beforeEach(async () => {
      f = await apiFixture()
    })

    it('GET /healthz and /readyz need no key', async () => {
      expect(await f.json('GET', '/healthz', { key: null })).toEqual({ status: 200, body: { status: 'ok' } })
      expect(await f.json('GET', '/readyz', { key: null })).toEqual({ status: 200, body: { status: 'ok' } })
    })

    it('GET /readyz is 503 unavailable when the database cannot take writes', async () => {
      await f.pb.store.close()
      const res = await f.json('GET', '/readyz', { key: null })
      expect(res).toMatchObject({ status: 503, body: { error: { code: 'unavailable' } } })
    })

    it('GET /metrics needs a viewer key and exposes the delivery metrics', async () => {
      expect((await f.json('GET', '/metrics', { key: null })).status).toBe(401)
      expect((await f.json('GET', '/metrics', { key: f.keys.publisher })).status).toBe(403)
      await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/a' } })
      await f.json('POST', '/v1/events', { body: { type: 'a', data: {} } })
      f.pb.metrics.attempt('webhook', 'success', 12)
      const res = await f.call('GET', '/metrics', { key: f.keys.viewer })
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toContain('text/plain')
      const text = await res.text()
      expect(text).toMatch(/postbox_queue_depth\{status="pending"\} 1/)
      expect(text).toMatch(/postbox_queue_depth\{status="in_flight"\} 0/)
      // Only the queue: counting finished rows would read the whole table at every scrape.
      expect(text).not.toMatch(/postbox_queue_depth\{status="(success|dead|cancelled)"\}/)
      expect(text).toMatch(/postbox_deliveries_total\{channel="webhook",outcome="success"\} 1/)
      expect(text).toContain('postbox_attempt_duration_seconds_bucket')
      expect(text).toContain('postbox_oldest_pending_age_seconds')
      expect(text).toMatch(/postbox_endpoint_circuit_state\{endpoint_id="ep_[^"]+"\} 0/)
    })

    it('the circuit-state metric says what the endpoint circuit field says', async () => {
      const ep = (await f.json('POST', '/v1/endpoints', { body: { url: 'https://example.com/a' } })).body as { id: string }
      const states: [string, string, number][] = []
      // Failures without a pause yet (4xx count only towards auto-disable); a pause; after it.
      for (const [failures, pauses, pausedFor] of [[7, 0, null], [5, 1, 60_000], [5, 1, -1_000]] as const) {
        const pausedUntil = pausedFor === null ? null : Date.now() + pausedFor
        await runSql(f.pb.store, `UPDATE endpoints SET consecutive_failures = ?, failures_since_success = ?, pause_count = ?, paused_until = ? WHERE id = ?`,
          [failures, failures, pauses, pausedUntil, ep.id])
        const api = (await f.json('GET', `/v1/endpoints/${ep.id}`)).body as { circuit: string }
        // The metrics read endpoint states once per event-loop turn.
        await new Promise((r) => setImmediate(r))
        const text = await (await f.call('GET', '/metrics', { key: f.keys.viewer })).text()
        const metric = Number(new RegExp(`postbox_endpoint_circuit_state\\{endpoint_id="${ep.id}"\\} (\\d)`).exec(text)![1])
        states.push([`${failures}/${pauses}/${pausedFor}`, api.circuit, metric])
      }
      expect(states).toEqual([['7/0/null', 'closed', 0], ['5/1/60000', 'open', 2], ['5/1/-1000', 'half_open', 1]])
    })

    it('GET /openapi.json is an OpenAPI 3.1 document covering the routes and the error schema', async () => {
      const res = await f.json('GET', '/openapi.json', { key: null })
      expect(res.status).toBe(200)
      expect(res.body.openapi).toBe('3.1.0')
      const paths = Object.keys(res.body.paths)
      for (const p of ['/v1/keys', '/v1/keys/{id}', '/v1/endpoints', '/v1/endpoints/{id}', '/v1/endpoints/{id}/secret/rotate', '/v1/events', '/v1/events/batch', '/v1/events/{id}', '/v1/deliveries', '/v1/deliveries/{id}/redeliver', '/healthz', '/readyz', '/metrics']) {
        expect(paths).toContain(p)
      }
      expect(res.body.components.schemas).toHaveProperty('Error')
      expect(res.body.components.schemas).toHaveProperty('EventIn')
      expect(res.body.components.securitySchemes).toHaveProperty('bearer')
      const eventIn = res.body.components.schemas.EventIn
      expect(eventIn.required).toEqual(expect.arrayContaining(['type', 'data']))
    })
  })

  describe('POSTBOX_METRICS_PUBLIC=true', () => {
    beforeEach(async () => {
      f = await apiFixture({ metricsPublic: true })
    })
    it('serves /metrics without a key', async () => {
      const res = await f.call('GET', '/metrics', { key: null })
      expect(res.status).toBe(200)
      expect(await res.text()).toContain('postbox_queue_depth')
    })
  })
})
