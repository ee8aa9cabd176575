import { resolveConfig } from './postbox.js'
import { describe, expect, it } from 'vitest'
import { ConfigError, DEFAULTS, flagsToEnv, loadConfig, SETTINGS, testConfig } from './config.js'

describe('loadConfig', () => {
  it('uses the embedded defaults with an empty environment', () => {
    const c = loadConfig({}, [])
    expect(c).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      dataDir: './data',
      dbPath: 'data/postbox.db',
      adminKey: null,
      allowNetworks: [],
      retrySchedule: DEFAULTS.retrySchedule,
      notificationRetrySchedule: DEFAULTS.notificationRetrySchedule,
      synchronous: 'normal',
      logLevel: 'info',
      smtpUrl: null,
      emailFrom: 'postbox@localhost',
      maxBody: 262_144,
      metricsPublic: false,
      retentionSuccessMs: 7 * 86_400_000,
      retentionDeadMs: 30 * 86_400_000,
      retentionInboxMs: 90 * 86_400_000,
      requestTimeoutMs: 15_000,
      shutdownTimeoutMs: 10_000,
      // docs/delivery.md: a rotated secret keeps verifying for 24 h, and auto-disable comes after 5 days.
      secretGraceMs: 86_400_000,
      disableAfterMs: 5 * 86_400_000,
      retentionEventsMs: 7 * 86_400_000,
      concurrency: 256,
      pollIntervalMs: 250,
    })
    expect(Object.isFrozen(c)).toBe(true)
  })

  it('reads every variable', () => {
    const c = loadConfig({
      POSTBOX_PORT: '9000',
      POSTBOX_HOST: '0.0.0.0',
      POSTBOX_DATA_DIR: '/data',
      POSTBOX_ALLOW_NETWORKS: '127.0.0.0/8, ::1/128',
      POSTBOX_RETRY_SCHEDULE: '500ms,2s,1m',
      POSTBOX_SYNCHRONOUS: 'FULL',
      POSTBOX_METRICS_PUBLIC: 'yes',
      POSTBOX_RETENTION_DEAD: '3d',
      POSTBOX_REQUEST_TIMEOUT: '60s',
      POSTBOX_SMTP_URL: 'smtp://user:pass@mail:587',
      POSTBOX_EMAIL_FROM: 'Postbox <noreply@example.com>',
      POSTBOX_MANDATORY_TOPICS: 'security., billing.failed',
      POSTBOX_LOG_LEVEL: '  ',
    })
    expect(c).toMatchObject({
      port: 9000,
      host: '0.0.0.0',
      dbPath: '/data/postbox.db',
      allowNetworks: ['127.0.0.0/8', '::1/128'],
      retrySchedule: [500, 2_000, 60_000],
      synchronous: 'full',
      metricsPublic: true,
      retentionDeadMs: 3 * 86_400_000,
      requestTimeoutMs: 60_000,
      mandatoryTopics: ['security.', 'billing.failed'],
      logLevel: 'info',
    })
  })

  it.each([
    ['POSTBOX_PORT', 'eighty'],
    ['POSTBOX_PORT', '70000'],
    ['POSTBOX_ALLOW_NETWORKS', '10.0.0.0'],
    ['POSTBOX_ALLOW_NETWORKS', '10.0.0.0/33'],
    ['POSTBOX_RETRY_SCHEDULE', '1s,soon'],
    ['POSTBOX_SYNCHRONOUS', 'off'],
    ['POSTBOX_LOG_LEVEL', 'loud'],
    ['POSTBOX_SMTP_URL', 'http://mail'],
    ['POSTBOX_EMAIL_FROM', 'not-an-address'],
    ['POSTBOX_MAX_BODY', '12'],
    ['POSTBOX_METRICS_PUBLIC', 'maybe'],
    ['POSTBOX_RETENTION_SUCCESS', '10s'],
    ['POSTBOX_RETENTION_INBOX', 'forever'],
    ['POSTBOX_REQUEST_TIMEOUT', '61s'],
    ['POSTBOX_REQUEST_TIMEOUT', '500ms'],
    ['POSTBOX_CONCURRENCY', '0'],
    ['POSTBOX_POLL_INTERVAL', '1ms'],
    ['POSTBOX_SHUTDOWN_TIMEOUT', '-1s'],
    // Shaped like a CIDR, but not one; and timers Node cannot schedule.
    ['POSTBOX_ALLOW_NETWORKS', '999.1.1.1/8'],
    ['POSTBOX_ALLOW_NETWORKS', ':::::/64'],
    ['POSTBOX_SHUTDOWN_TIMEOUT', '30d'],
    ['POSTBOX_POLL_INTERVAL', '30d'],
    // Hosts that could never be bound (serve would fail with ENOTFOUND), short HMAC keys, bad topics.
    ['POSTBOX_HOST', '999.1.1.1'],
    ['POSTBOX_HOST', '1.2.3'],
    ['POSTBOX_HOST', 'bad host'],
    ['POSTBOX_HOST', '-leading.example.com'],
    ['POSTBOX_HOST', 'a..b'],
    ['POSTBOX_HOST', '[::1]'],
    ['POSTBOX_HOST', `${'a'.repeat(64)}.example.com`],
    ['POSTBOX_TOKEN_SECRET', 'x'],
    ['POSTBOX_TOKEN_SECRET', 'a'.repeat(31)],
    ['POSTBOX_MANDATORY_TOPICS', 'A B'],
    ['POSTBOX_MANDATORY_TOPICS', 'security.,Billing'],
    ['POSTBOX_MANDATORY_TOPICS', 'x'.repeat(201)],
    ['POSTBOX_CORS_ORIGINS', 'app.example.com'],
    ['POSTBOX_CORS_ORIGINS', 'https://app.example.com/path'],
  ])('%s=%j fails naming the variable', (name, value) => {
    let err: unknown
    try {
      loadConfig({ [name]: value })
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(ConfigError)
    expect((err as ConfigError).variable).toBe(name)
    expect((err as Error).message.startsWith(`${name}:`)).toBe(true)
  })

  it.each(['0.0.0.0', '127.0.0.1', '::', '::1', 'localhost', 'my-host', 'postbox.internal', 'node-1.example.com.', 'fe80::1%eth0'])(
    'POSTBOX_HOST=%j is accepted',
    (host) => {
      expect(loadConfig({ POSTBOX_HOST: host }).host).toBe(host)
    },
  )

  it('a 32-character token secret and valid mandatory topics are accepted; the secret is never echoed', () => {
    const c = loadConfig({ POSTBOX_TOKEN_SECRET: 's'.repeat(32), POSTBOX_MANDATORY_TOPICS: 'security.,billing:failed,a_b-c' })
    expect(c).toMatchObject({ tokenSecret: 's'.repeat(32), mandatoryTopics: ['security.', 'billing:failed', 'a_b-c'] })
    expect(() => loadConfig({ POSTBOX_TOKEN_SECRET: 'hunter2' })).toThrow(/^POSTBOX_TOKEN_SECRET: must be at least 32 characters/)
    expect(() => loadConfig({ POSTBOX_TOKEN_SECRET: 'hunter2' })).not.toThrow(/hunter2/)
  })

  it('flags override environment variables, in both --flag value and --flag=value forms', () => {
    const c = loadConfig({ POSTBOX_PORT: '9000', POSTBOX_HOST: 'a' }, ['serve', '--port', '9100', '--host=b', '--metrics-public', '--unknown', 'x'])
    expect(c).toMatchObject({ port: 9100, host: 'b', metricsPublic: true })
  })

  it('a bad flag value names its variable; a flag without a value fails', () => {
    expect(() => loadConfig({}, ['--port', 'x'])).toThrow(/^POSTBOX_PORT:/)
    expect(() => loadConfig({}, ['--port'])).toThrow(/^POSTBOX_PORT: --port needs a value/)
    expect(() => loadConfig({}, ['--db', '--port', '1'])).toThrow(/^POSTBOX_DB:/)
  })

  it('every setting has a distinct variable and flag', () => {
    expect(new Set(SETTINGS.map((s) => s.env)).size).toBe(SETTINGS.length)
    expect(new Set(SETTINGS.map((s) => s.flag)).size).toBe(SETTINGS.length)
    for (const s of SETTINGS) expect(flagsToEnv([`${s.flag}=v`])).toEqual({ [s.env]: 'v' })
  })

  it('library options go through the same checks as the environment', () => {
    expect(() => resolveConfig({ maxBody: -5 })).toThrow(/POSTBOX_MAX_BODY: .*option maxBody/)
    expect(() => resolveConfig({ retrySchedule: 'x' as never })).toThrow(ConfigError)
    expect(() => resolveConfig({ allowNetworks: ['999.1.1.1/8'] })).toThrow(/POSTBOX_ALLOW_NETWORKS/)
    expect(() => resolveConfig({ host: '999.1.1.1' })).toThrow(/^POSTBOX_HOST:/)
    expect(() => resolveConfig({ tokenSecret: 'short' })).toThrow(/^POSTBOX_TOKEN_SECRET:/)
    expect(() => resolveConfig({ mandatoryTopics: ['Not A Topic'] })).toThrow(/^POSTBOX_MANDATORY_TOPICS:/)
    expect(resolveConfig({ maxBody: 2048, allowNetworks: ['127.0.0.0/8'] })).toMatchObject({ maxBody: 2048 })
  })

  it('library options: unknown names are refused, durations read like the environment, every value checked', () => {
    const opts = (o: Record<string, unknown>) => resolveConfig(o as never)
    expect(() => opts({ requestTimeout: '20s' })).toThrow('unknown option "requestTimeout" (did you mean requestTimeoutMs?)')
    expect(() => opts({ maxbody: 2048 })).toThrow('unknown option "maxbody" (did you mean maxBody?)')
    expect(() => opts({ colour: 'red' })).toThrow(/^options: unknown option "colour"$/)
    expect(() => opts({ dbPath: '/tmp/x.db' })).toThrow('unknown option "dbPath" (did you mean db?)')
    expect(opts({ requestTimeoutMs: '20s', retentionSuccessMs: '1d', pollIntervalMs: 50 })).toMatchObject({ requestTimeoutMs: 20_000, retentionSuccessMs: 86_400_000, pollIntervalMs: 50 })
    expect(() => opts({ requestTimeoutMs: 'soon' })).toThrow(/requestTimeoutMs: expected milliseconds or a duration/)
    expect(opts({ retrySchedule: '1s,2s' }).retrySchedule).toEqual([1000, 2000])
    expect(opts({ retrySchedule: ['500ms', 60_000] }).retrySchedule).toEqual([500, 60_000])
    expect(() => opts({ retrySchedule: ['1s', 'later'] })).toThrow(/retrySchedule: expected delays/)
    // Power-loss durability must not silently fall back to NORMAL.
    expect(opts({ synchronous: 'FULL' }).synchronous).toBe('full')
    expect(() => opts({ synchronous: 'off' })).toThrow(/^POSTBOX_SYNCHRONOUS: .*option synchronous/)
    expect(opts({ logLevel: 'WARN' }).logLevel).toBe('warn')
    expect(() => opts({ logLevel: 'verbose' })).toThrow(/^POSTBOX_LOG_LEVEL:/)
    expect(() => opts({ emailFrom: 'nope' })).toThrow(/^POSTBOX_EMAIL_FROM:/)
    expect(() => opts({ smtpUrl: 'http://x' })).toThrow(/^POSTBOX_SMTP_URL:/)
    expect(() => opts({ metricsPublic: 'yes' })).toThrow(/^POSTBOX_METRICS_PUBLIC:/)
    expect(() => opts({ dataDir: 42 })).toThrow(/^POSTBOX_DATA_DIR:/)
    expect(() => opts({ db: 42 })).toThrow(/^POSTBOX_DB:/)
    expect(opts({ smtpUrl: 'smtp://mail:25', emailFrom: 'Shop <shop@example.com>', metricsPublic: true })).toMatchObject({ smtpUrl: 'smtp://mail:25', metricsPublic: true })
  })

  it('the environment gets the same checks and lower-casing', () => {
    expect(loadConfig({ POSTBOX_SYNCHRONOUS: 'FULL', POSTBOX_LOG_LEVEL: 'Debug' })).toMatchObject({ synchronous: 'full', logLevel: 'debug' })
    expect(() => loadConfig({ POSTBOX_SYNCHRONOUS: 'off' })).toThrow(/^POSTBOX_SYNCHRONOUS:/)
    expect(() => loadConfig({ POSTBOX_EMAIL_FROM: 'nope' })).toThrow(/^POSTBOX_EMAIL_FROM:/)
  })

  it('testConfig applies overrides over the defaults', () => {
    expect(testConfig({ port: 0, allowNetworks: ['127.0.0.0/8'] })).toMatchObject({ port: 0, host: '127.0.0.1', allowNetworks: ['127.0.0.0/8'] })
  })
})
