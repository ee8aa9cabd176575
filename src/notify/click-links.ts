import { createHmac } from 'node:crypto'
import { issueSignedToken, readSignedToken } from '../lib/signed-token.js'

/** What a tracked email link names: a notification and one of its recipients. */
export interface ClickClaims {
  notificationId: string
  recipient: string
}

/** The tracked link's own key, derived from the token key so a user token can never pass for a link. */
const linkKey = (key: Buffer | string): Buffer => createHmac('sha256', key).update('postbox click link v1').digest()

/**
 * Signs `<base64url(json [notification id, recipient])>.<HMAC>`: the path segment of
 * `<public url>/c/<signed>`. The link holds no URL; the route redirects only to the
 * notification's own recorded action_url.
 */
export function signClickLink(key: Buffer | string, c: ClickClaims): string {
  return issueSignedToken('', linkKey(key), [c.notificationId, c.recipient])
}

/** Verifies a signed link in constant time; null when malformed or tampered. */
export function verifyClickLink(key: Buffer | string, signed: string): ClickClaims | null {
  const v = readSignedToken('', linkKey(key), signed, 2048)
  if (!Array.isArray(v) || v.length !== 2 || typeof v[0] !== 'string' || typeof v[1] !== 'string') return null
  return { notificationId: v[0], recipient: v[1] }
}

/** True for an absolute http(s) URL: the only kind a tracked link redirects to. */
export function isHttpUrl(url: string | null | undefined): url is string {
  if (!url) return false
  try {
    const u = new URL(url)
    return (u.protocol === 'http:' || u.protocol === 'https:') && /^https?:\/\//i.test(url)
  } catch {
    return false
  }
}

const escapeHtml = (s: string): string => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** Replaces every occurrence of `url` (as written, and HTML-escaped in `html`) with `tracked`. */
export function rewriteLinks(text: string, url: string, tracked: string, html = false): string {
  let out = text.split(url).join(tracked)
  if (html) {
    const escaped = escapeHtml(url)
    if (escaped !== url) out = out.split(escaped).join(escapeHtml(tracked))
  }
  return out
}
