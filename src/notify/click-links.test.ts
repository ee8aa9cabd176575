import { describe, expect, it } from 'vitest'
import { isHttpUrl, rewriteLinks, signClickLink, verifyClickLink } from './click-links.js'
import { issueUserToken } from './tokens.js'

describe('tracked email links', () => {
  it('verifies its own links and refuses every change', () => {
    const link = signClickLink('key', { notificationId: 'ntf_1', recipient: 'ann' })
    expect(verifyClickLink('key', link)).toEqual({ notificationId: 'ntf_1', recipient: 'ann' })
    expect(verifyClickLink('other key', link)).toBeNull()
    const [body, mac] = link.split('.') as [string, string]
    expect(verifyClickLink('key', `${body}.${mac.slice(1)}A`)).toBeNull()
    expect(verifyClickLink('key', `${Buffer.from('["ntf_1","bob"]').toString('base64url')}.${mac}`)).toBeNull()
    expect(verifyClickLink('key', `${body}.${mac}.x`)).toBeNull()
    expect(verifyClickLink('key', 'x'.repeat(3000))).toBeNull()
    // A user token signed with the same key is no link (the link key is derived).
    expect(verifyClickLink('key', issueUserToken('key', 'ann', 1e15).slice(4))).toBeNull()
  })

  it('redirects only to absolute http(s) URLs', () => {
    for (const ok of ['https://a.test/x', 'HTTP://a.test']) expect(isHttpUrl(ok)).toBe(true)
    for (const bad of ['/path', '//a.test', 'javascript:alert(1)', 'data:text/html,x', 'ftp://a.test', '', null]) expect(isHttpUrl(bad)).toBe(false)
  })

  it('rewrites every occurrence, HTML-escaped ones in HTML too', () => {
    const url = 'https://a.test/x?a=1&b=2'
    expect(rewriteLinks(`go ${url} or ${url}`, url, 'T')).toBe('go T or T')
    expect(rewriteLinks(`<a href="https://a.test/x?a=1&amp;b=2">x</a>`, url, 'https://t/c/1', true)).toBe('<a href="https://t/c/1">x</a>')
  })
})
