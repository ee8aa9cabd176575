import { describe, expect, it } from 'vitest'
import { decodePayload, encodePayload, type DeliveryPayload } from './delivery-payload.js'

const row = { notificationId: 'ntf_1', recipient: 'u1', eventType: 'deploy.done' }
const full: DeliveryPayload = {
  notification_id: 'ntf_1',
  topic: 'deploy.done',
  title: 'Deployed',
  body: '<b>ok</b>',
  format: 'html',
  severity: 'critical',
  action_url: 'https://example.com/d/1',
  payload: { build: 7 },
  recipient: { id: 'u1', email: 'ann@example.com', name: 'Ann', locale: 'fr-CA', external: false },
}
const { notification_id: _n, topic: _t, recipient: { id: _i, ...details }, ...content } = full

describe('delivery payloads', () => {
  it('round-trips through the stored form, taking ids and topic from the row', () => {
    const json = encodePayload({ ...content, recipient: details })
    expect(json).not.toContain('ntf_1')
    expect(json).not.toContain('deploy.done')
    expect(decodePayload(json, row)).toEqual(full)
  })

  it('stores only the title when everything else is at its default', () => {
    const bare = { title: 'Hi', body: '', format: 'text', severity: 'info', action_url: null, payload: {} } as const
    const json = encodePayload({ ...bare, recipient: { email: null, name: null, locale: null, external: false } })
    expect(json).toBe('{"title":"Hi"}')
    expect(decodePayload(json, row)).toEqual({
      ...bare,
      notification_id: 'ntf_1',
      topic: 'deploy.done',
      recipient: { id: 'u1', email: null, name: null, locale: null, external: false },
    })
  })

  it('keeps the external flag of an address-only recipient', () => {
    const json = encodePayload({ ...content, recipient: { email: 'x@example.org', name: null, locale: null, external: true } })
    const ext = { ...row, recipient: 'x@example.org' }
    expect(decodePayload(json, ext)!.recipient).toEqual({ id: 'x@example.org', email: 'x@example.org', name: null, locale: null, external: true })
  })

  it('reads the complete form written by earlier versions', () => {
    expect(decodePayload(JSON.stringify(full), { notificationId: null, recipient: null, eventType: 'other' })).toEqual(full)
  })

  it('refuses what is not a notification payload', () => {
    expect(decodePayload(null, row)).toBeNull()
    expect(decodePayload('not json', row)).toBeNull()
    expect(decodePayload('{"body":"no title"}', row)).toBeNull()
    expect(decodePayload('{"title":"t"}', { notificationId: null, recipient: 'u1', eventType: 't' })).toBeNull()
  })
})
