import { Webhook } from 'standardwebhooks'
import { describe, expect, it } from 'vitest'
import { decodeSecret, signatureHeaders, signHmacSha256, signStandard } from './signer.js'

const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'

describe('signer', () => {
  it('matches the standardwebhooks reference implementation byte for byte', () => {
    const wh = new Webhook(secret)
    const ts = 1_700_000_000
    expect(signStandard(secret, 'msg_1', ts, '{"a":1}')).toBe(wh.sign('msg_1', new Date(ts * 1000), '{"a":1}'))
  })

  it('lists every signature, current first, during a grace period', () => {
    const old = 'whsec_' + Buffer.alloc(32, 9).toString('base64')
    const h = signatureHeaders({ mode: 'standard', secret, previous: [old] }, 'id', 1, 'b')
    expect(h['webhook-signature']).toBe(`${signStandard(secret, 'id', 1, 'b')} ${signStandard(old, 'id', 1, 'b')}`)
  })

  it('hmac-sha256 mode uses the UTF-8 secret and the body only', () => {
    // echo -n body | openssl dgst -sha256 -hmac key
    expect(signHmacSha256('key', 'body')).toBe('sha256=515aae133b435d4000956731f68ae5cf5eb85d4f0dc6a546d2bfcd3595ec1ae1')
    const h = signatureHeaders({ mode: 'hmac-sha256', secret: 'key', previous: ['old'] }, 'id', 1, 'body')
    expect(h).toEqual({ 'x-postbox-signature': signHmacSha256('key', 'body'), 'x-postbox-signature-previous': signHmacSha256('old', 'body') })
    expect(h['webhook-signature']).toBeUndefined()
  })

  it('decodes secrets with or without the prefix and rejects malformed ones', () => {
    expect(decodeSecret(secret)).toHaveLength(24)
    expect(decodeSecret(secret.slice(6))).toHaveLength(24)
    expect(decodeSecret('whsec_')).toBeNull()
    expect(decodeSecret('whsec_abc')).toBeNull()
    expect(decodeSecret('whsec_a b=')).toBeNull()
  })
})
