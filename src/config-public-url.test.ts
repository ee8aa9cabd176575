import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from './config.js'

describe('POSTBOX_PUBLIC_URL and POSTBOX_TRACK_CLICKS', () => {
  it('defaults the public URL to http://<host>:<port>, with 127.0.0.1 for 0.0.0.0, and strips a trailing slash', () => {
    expect(loadConfig({}).publicUrl).toBe('http://127.0.0.1:8080')
    expect(loadConfig({ POSTBOX_HOST: '0.0.0.0', POSTBOX_PORT: '9000' }).publicUrl).toBe('http://127.0.0.1:9000')
    expect(loadConfig({ POSTBOX_HOST: 'box.local' }).publicUrl).toBe('http://box.local:8080')
    expect(loadConfig({ POSTBOX_PUBLIC_URL: 'https://pb.example.com/base/' }).publicUrl).toBe('https://pb.example.com/base')
    expect(loadConfig({}, ['--public-url', 'https://x.test']).publicUrl).toBe('https://x.test')
    expect(() => loadConfig({ POSTBOX_PUBLIC_URL: 'ftp://x.test' })).toThrow(ConfigError)
    expect(() => loadConfig({ POSTBOX_PUBLIC_URL: 'not a url' })).toThrow(/^POSTBOX_PUBLIC_URL:/)
  })

  it('tracks clicks only when asked', () => {
    expect(loadConfig({}).trackClicks).toBe(false)
    expect(loadConfig({ POSTBOX_TRACK_CLICKS: 'true' }).trackClicks).toBe(true)
    expect(loadConfig({}, ['--track-clicks']).trackClicks).toBe(true)
    expect(() => loadConfig({ POSTBOX_TRACK_CLICKS: 'maybe' })).toThrow(ConfigError)
  })
})
