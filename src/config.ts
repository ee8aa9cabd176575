import { join } from 'node:path'
import ipaddr from 'ipaddr.js'
import { parseDuration, parseDurationList } from './lib/duration.js'

/** Embedded defaults, each with the reason it was chosen. */
export const DEFAULTS = {
  /** The port the image exposes and the README documents. */
  port: 8080,
  /** Loopback by default so a laptop install is not reachable from the network; the image sets 0.0.0.0. */
  host: '127.0.0.1',
  /** Relative to the working directory, so `npm start` keeps everything in ./data. */
  dataDir: './data',
  /** NORMAL is durable across process crashes in WAL mode; FULL adds power-loss durability at ~2x commit cost. */
  synchronous: 'normal' as 'normal' | 'full',
  /** info: one line per start/stop and per operator-relevant event, not per delivery. */
  logLevel: 'info',
  /** SPEC §2: 1s, 10s, 1m, 10m, 1h, 6h, 24h = 8 attempts in total. */
  retrySchedule: [1_000, 10_000, 60_000, 600_000, 3_600_000, 21_600_000, 86_400_000],
  /** SPEC §2: notifications are more urgent and less valuable late: 6 attempts over ~1h11m. */
  notificationRetrySchedule: [1_000, 10_000, 60_000, 600_000, 3_600_000],
  /** SPEC §6: 256 KiB covers real event payloads and bounds memory per request. */
  maxBody: 256 * 1024,
  /** Metrics need a viewer key unless explicitly opened. */
  metricsPublic: false,
  /** SPEC §2 retention: successful deliveries are only interesting for about a week. */
  retentionSuccessMs: 7 * 86_400_000,
  /** SPEC §2 retention: dead and cancelled deliveries stay a month so they can be recovered. */
  retentionDeadMs: 30 * 86_400_000,
  /** SPEC §2 retention: inbox messages older than a quarter are rarely opened. */
  retentionInboxMs: 90 * 86_400_000,
  /** Events with no remaining deliveries are kept this long (for GET /v1/events/:id and dedup). */
  retentionEventsMs: 7 * 86_400_000,
  /** SPEC §3: a rotated secret keeps verifying for a day so receivers can roll over. */
  secretGraceMs: 86_400_000,
  /** SPEC §3: default webhook request timeout. */
  requestTimeoutMs: 15_000,
  /** SPEC §5: disable an endpoint after this long without a success (and >= 10 failures). */
  disableAfterMs: 5 * 86_400_000,
  /** SPEC §9: SIGTERM drains in-flight requests within this deadline. */
  shutdownTimeoutMs: 10_000,
  /** Global cap on in-flight deliveries; 256 sockets keep 2 cores busy without exhausting fds. */
  concurrency: 256,
  /** Only scheduled retries wait on this timer; new work wakes the dispatcher on commit. */
  pollIntervalMs: 250,
  /** SPEC §6: end-user tokens live a day unless asked otherwise. */
  userTokenTtlMs: 86_400_000,
  /** Open: any event type is accepted, and the catalog only validates the types it lists. */
  eventTypes: 'open' as 'open' | 'strict',
  /** Tracked email links are opt-in: rewriting links changes what recipients see (docs/notifications.md). */
  trackClicks: false,
}

/** The validated, frozen runtime configuration. */
export interface Config {
  readonly port: number
  readonly host: string
  readonly dataDir: string
  readonly dbPath: string
  readonly adminKey: string | null
  readonly allowNetworks: readonly string[]
  readonly retrySchedule: readonly number[]
  readonly notificationRetrySchedule: readonly number[]
  readonly synchronous: 'normal' | 'full'
  readonly logLevel: string
  readonly smtpUrl: string | null
  readonly emailFrom: string
  readonly mandatoryTopics: readonly string[]
  readonly maxBody: number
  readonly metricsPublic: boolean
  readonly retentionSuccessMs: number
  readonly retentionDeadMs: number
  readonly retentionInboxMs: number
  readonly retentionEventsMs: number
  readonly secretGraceMs: number
  readonly requestTimeoutMs: number
  readonly disableAfterMs: number
  readonly shutdownTimeoutMs: number
  readonly concurrency: number
  readonly pollIntervalMs: number
  readonly tokenSecret: string | null
  /** Browser origins allowed to call /v1 (`https://app.example.com`, or `*`); empty = no CORS headers. */
  readonly corsOrigins: readonly string[]
  /** Browser origins allowed to call the user-token routes (/v1/inbox…); empty = any origin. */
  readonly inboxOrigins: readonly string[]
  /** Origins whose pages may embed /portal in an iframe (CSP frame-ancestors); empty = this origin only. */
  readonly portalOrigins: readonly string[]
  /** The server's public base URL (no trailing slash): portal links and click links start with it. */
  readonly publicUrl: string
  /** `strict`: only catalog event types are accepted, and endpoints subscribe only to them or to wildcards. */
  readonly eventTypes: 'open' | 'strict'
  /** Rewrite email links to action_url into tracked `<publicUrl>/c/<signed>` links. */
  readonly trackClicks: boolean
}

/** Thrown for a bad setting; the message names the variable. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`)
    this.name = 'ConfigError'
  }
}

/** One documented setting: environment variable, flag, default text and description. */
export interface SettingDoc {
  env: string
  flag: string
  default: string
  description: string
}

/** Every setting, in README order; the CLI's --help and the README table come from this list. */
export const SETTINGS: readonly SettingDoc[] = [
  { env: 'POSTBOX_PORT', flag: '--port', default: '8080', description: 'HTTP port' },
  { env: 'POSTBOX_HOST', flag: '--host', default: '127.0.0.1', description: 'Bind address (the Docker image sets 0.0.0.0)' },
  { env: 'POSTBOX_DATA_DIR', flag: '--data-dir', default: './data', description: 'Directory for the database, the generated admin key and the token secret' },
  { env: 'POSTBOX_DB', flag: '--db', default: '<data dir>/postbox.db', description: 'SQLite database file' },
  { env: 'POSTBOX_ADMIN_KEY', flag: '--admin-key', default: '(generated)', description: 'First admin key, used only when no admin key exists yet' },
  { env: 'POSTBOX_ALLOW_NETWORKS', flag: '--allow-networks', default: '(none)', description: 'Comma list of CIDRs that webhooks may reach despite being non-public, e.g. 127.0.0.0/8,::1/128' },
  { env: 'POSTBOX_RETRY_SCHEDULE', flag: '--retry-schedule', default: '1s,10s,1m,10m,1h,6h,24h', description: 'Webhook retry delays; attempts = delays + 1' },
  { env: 'POSTBOX_NOTIFICATION_RETRY_SCHEDULE', flag: '--notification-retry-schedule', default: '1s,10s,1m,10m,1h', description: 'Inbox and email retry delays' },
  { env: 'POSTBOX_SYNCHRONOUS', flag: '--synchronous', default: 'normal', description: 'SQLite synchronous mode: normal or full (full survives power loss)' },
  { env: 'POSTBOX_LOG_LEVEL', flag: '--log-level', default: 'info', description: 'trace, debug, info, warn, error, fatal or silent' },
  { env: 'POSTBOX_SMTP_URL', flag: '--smtp-url', default: '(unset)', description: 'SMTP server for the email channel, e.g. smtp://user:pass@host:587' },
  { env: 'POSTBOX_EMAIL_FROM', flag: '--email-from', default: 'postbox@localhost', description: 'From address of notification emails' },
  { env: 'POSTBOX_MANDATORY_TOPICS', flag: '--mandatory-topics', default: '(none)', description: 'Comma list of topics (exact, or prefixes ending in ".") that skip preferences, quiet hours and digests' },
  { env: 'POSTBOX_MAX_BODY', flag: '--max-body', default: '262144', description: 'Largest accepted request body in bytes' },
  { env: 'POSTBOX_METRICS_PUBLIC', flag: '--metrics-public', default: 'false', description: 'Serve /metrics without a key' },
  { env: 'POSTBOX_RETENTION_SUCCESS', flag: '--retention-success', default: '7d', description: 'Keep successful deliveries and their attempts this long' },
  { env: 'POSTBOX_RETENTION_DEAD', flag: '--retention-dead', default: '30d', description: 'Keep dead and cancelled deliveries this long' },
  { env: 'POSTBOX_RETENTION_INBOX', flag: '--retention-inbox', default: '90d', description: 'Keep inbox messages this long' },
  { env: 'POSTBOX_RETENTION_EVENTS', flag: '--retention-events', default: '7d', description: 'Keep events and notifications with no remaining deliveries this long' },
  { env: 'POSTBOX_SECRET_GRACE', flag: '--secret-grace', default: '24h', description: 'How long a rotated signing secret keeps being sent' },
  { env: 'POSTBOX_REQUEST_TIMEOUT', flag: '--request-timeout', default: '15s', description: 'Default webhook request timeout (endpoints may set 1s-60s)' },
  { env: 'POSTBOX_DISABLE_AFTER', flag: '--disable-after', default: '5d', description: 'Disable an endpoint with no success for this long and at least 10 failures' },
  { env: 'POSTBOX_SHUTDOWN_TIMEOUT', flag: '--shutdown-timeout', default: '10s', description: 'Deadline to drain in-flight requests on SIGTERM/SIGINT' },
  { env: 'POSTBOX_CONCURRENCY', flag: '--concurrency', default: '256', description: 'Global cap on in-flight deliveries' },
  { env: 'POSTBOX_POLL_INTERVAL', flag: '--poll-interval', default: '250ms', description: 'Timer for scheduled retries (new work wakes the dispatcher at once)' },
  { env: 'POSTBOX_TOKEN_SECRET', flag: '--token-secret', default: '(generated)', description: 'Key that signs end-user inbox tokens (at least 32 characters); generated into <data dir>/token-secret.txt when unset' },
  { env: 'POSTBOX_PUBLIC_URL', flag: '--public-url', default: 'http://<host>:<port>', description: 'Public base URL of this server, for portal links (127.0.0.1 when the host is 0.0.0.0)' },
  { env: 'POSTBOX_EVENT_TYPES', flag: '--event-types', default: 'open', description: 'open, or strict: only event types in the catalog are accepted' },
  { env: 'POSTBOX_TRACK_CLICKS', flag: '--track-clicks', default: 'false', description: 'Rewrite email links to a notification’s action_url into tracked <public URL>/c/… links' },
  { env: 'POSTBOX_CORS_ORIGINS', flag: '--cors-origins', default: '(none)', description: 'Comma list of browser origins allowed to call /v1 (CORS), e.g. https://app.example.com, or * for any' },
  { env: 'POSTBOX_INBOX_ORIGINS', flag: '--inbox-origins', default: '(any)', description: 'Comma list of browser origins allowed to call the user-token routes /v1/inbox… (CORS, for the inbox element); unset means any origin' },
  { env: 'POSTBOX_PORTAL_ORIGINS', flag: '--portal-origins', default: '(none)', description: 'Comma list of origins whose pages may embed /portal in an iframe, e.g. https://app.example.com (without it only Postbox itself may)' },
]

type Source = Record<string, string | undefined>

/** Turns `--flag value` / `--flag=value` arguments into the matching POSTBOX_* variables. */
export function flagsToEnv(argv: readonly string[]): Source {
  const out: Source = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (!arg.startsWith('--')) continue
    const eq = arg.indexOf('=')
    const flag = eq === -1 ? arg : arg.slice(0, eq)
    const setting = SETTINGS.find((s) => s.flag === flag)
    if (!setting) continue
    if (eq !== -1) out[setting.env] = arg.slice(eq + 1)
    else if ((setting.env === 'POSTBOX_METRICS_PUBLIC' || setting.env === 'POSTBOX_TRACK_CLICKS') && (argv[i + 1] === undefined || argv[i + 1]!.startsWith('--'))) out[setting.env] = 'true'
    else if (argv[i + 1] === undefined || argv[i + 1]!.startsWith('--')) throw new ConfigError(setting.env, `${flag} needs a value`)
    else out[setting.env] = argv[++i]
  }
  return out
}

/** Loads, validates and freezes the configuration; flags win over environment variables. */
export function loadConfig(env: Source = process.env, argv: readonly string[] = []): Config {
  const src: Source = { ...env, ...flagsToEnv(argv) }
  const get = (name: string): string | undefined => {
    const v = src[name]
    return v === undefined || v.trim() === '' ? undefined : v.trim()
  }
  const int = (name: string, def: number, min: number, max: number): number => {
    const v = get(name)
    if (v === undefined) return def
    if (!/^\d+$/.test(v)) throw new ConfigError(name, `expected a whole number, got "${v}"`)
    const n = Number(v)
    if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`)
    return n
  }
  const duration = (name: string, def: number, min = 0): number => {
    const v = get(name)
    if (v === undefined) return def
    const ms = parseDuration(v)
    if (ms === null) throw new ConfigError(name, `expected a duration such as 500ms, 10s, 5m, 6h or 7d, got "${v}"`)
    if (ms < min) throw new ConfigError(name, `must be at least ${min}ms`)
    return ms
  }
  const schedule = (name: string, def: number[]): number[] => {
    const v = get(name)
    if (v === undefined) return def
    const list = parseDurationList(v)
    if (list === null) throw new ConfigError(name, `expected a comma list of durations such as 500ms,2s,1m, got "${v}"`)
    if (list.length > 50) throw new ConfigError(name, 'at most 50 retry delays')
    return list
  }
  const bool = (name: string, def: boolean): boolean => {
    const v = get(name)
    if (v === undefined) return def
    if (/^(true|1|yes|on)$/i.test(v)) return true
    if (/^(false|0|no|off)$/i.test(v)) return false
    throw new ConfigError(name, `expected true or false, got "${v}"`)
  }
  const list = (name: string): string[] =>
    (get(name) ?? '').split(',').map((s) => s.trim()).filter((s) => s.length > 0)

  const synchronous = (get('POSTBOX_SYNCHRONOUS') ?? DEFAULTS.synchronous) as Config['synchronous']
  const logLevel = get('POSTBOX_LOG_LEVEL') ?? DEFAULTS.logLevel
  const allowNetworks = list('POSTBOX_ALLOW_NETWORKS')
  const smtpUrl = get('POSTBOX_SMTP_URL') ?? null
  const emailFrom = get('POSTBOX_EMAIL_FROM') ?? 'postbox@localhost'
  const dataDir = get('POSTBOX_DATA_DIR') ?? DEFAULTS.dataDir
  const config: Config = {
    port: int('POSTBOX_PORT', DEFAULTS.port, 0, 65535),
    host: get('POSTBOX_HOST') ?? DEFAULTS.host,
    dataDir,
    dbPath: get('POSTBOX_DB') ?? join(dataDir, 'postbox.db'),
    adminKey: get('POSTBOX_ADMIN_KEY') ?? null,
    allowNetworks,
    retrySchedule: schedule('POSTBOX_RETRY_SCHEDULE', DEFAULTS.retrySchedule),
    notificationRetrySchedule: schedule('POSTBOX_NOTIFICATION_RETRY_SCHEDULE', DEFAULTS.notificationRetrySchedule),
    synchronous,
    logLevel,
    smtpUrl,
    emailFrom,
    mandatoryTopics: list('POSTBOX_MANDATORY_TOPICS'),
    maxBody: int('POSTBOX_MAX_BODY', DEFAULTS.maxBody, 1024, 64 * 1024 * 1024),
    metricsPublic: bool('POSTBOX_METRICS_PUBLIC', DEFAULTS.metricsPublic),
    retentionSuccessMs: duration('POSTBOX_RETENTION_SUCCESS', DEFAULTS.retentionSuccessMs, 60_000),
    retentionDeadMs: duration('POSTBOX_RETENTION_DEAD', DEFAULTS.retentionDeadMs, 60_000),
    retentionInboxMs: duration('POSTBOX_RETENTION_INBOX', DEFAULTS.retentionInboxMs, 60_000),
    retentionEventsMs: duration('POSTBOX_RETENTION_EVENTS', DEFAULTS.retentionEventsMs, 60_000),
    secretGraceMs: duration('POSTBOX_SECRET_GRACE', DEFAULTS.secretGraceMs),
    requestTimeoutMs: duration('POSTBOX_REQUEST_TIMEOUT', DEFAULTS.requestTimeoutMs, 1000),
    disableAfterMs: duration('POSTBOX_DISABLE_AFTER', DEFAULTS.disableAfterMs, 60_000),
    shutdownTimeoutMs: duration('POSTBOX_SHUTDOWN_TIMEOUT', DEFAULTS.shutdownTimeoutMs),
    concurrency: int('POSTBOX_CONCURRENCY', DEFAULTS.concurrency, 1, 10_000),
    pollIntervalMs: duration('POSTBOX_POLL_INTERVAL', DEFAULTS.pollIntervalMs, 10),
    tokenSecret: get('POSTBOX_TOKEN_SECRET') ?? null,
    corsOrigins: list('POSTBOX_CORS_ORIGINS'),
    inboxOrigins: list('POSTBOX_INBOX_ORIGINS'),
    portalOrigins: list('POSTBOX_PORTAL_ORIGINS'),
    publicUrl: get('POSTBOX_PUBLIC_URL') ?? '',
    eventTypes: (get('POSTBOX_EVENT_TYPES') ?? DEFAULTS.eventTypes) as Config['eventTypes'],
    trackClicks: bool('POSTBOX_TRACK_CLICKS', DEFAULTS.trackClicks),
  }
  return Object.freeze(checkConfig(config))
}

const DAY = 86_400_000

/**
 * The range of every numeric setting, with the variable that sets it. Checked for the
 * environment, flags and library options alike; the upper bounds keep timers within what
 * Node can schedule (a larger delay fires at once, with a warning).
 */
const BOUNDS: readonly (readonly [keyof Config, string, number, number])[] = [
  ['port', 'POSTBOX_PORT', 0, 65_535],
  ['maxBody', 'POSTBOX_MAX_BODY', 1024, 64 * 1024 * 1024],
  ['concurrency', 'POSTBOX_CONCURRENCY', 1, 10_000],
  ['retentionSuccessMs', 'POSTBOX_RETENTION_SUCCESS', 60_000, 3650 * DAY],
  ['retentionDeadMs', 'POSTBOX_RETENTION_DEAD', 60_000, 3650 * DAY],
  ['retentionInboxMs', 'POSTBOX_RETENTION_INBOX', 60_000, 3650 * DAY],
  ['retentionEventsMs', 'POSTBOX_RETENTION_EVENTS', 60_000, 3650 * DAY],
  ['secretGraceMs', 'POSTBOX_SECRET_GRACE', 0, 365 * DAY],
  ['requestTimeoutMs', 'POSTBOX_REQUEST_TIMEOUT', 1000, 60_000],
  ['disableAfterMs', 'POSTBOX_DISABLE_AFTER', 60_000, 3650 * DAY],
  ['shutdownTimeoutMs', 'POSTBOX_SHUTDOWN_TIMEOUT', 0, DAY],
  ['pollIntervalMs', 'POSTBOX_POLL_INTERVAL', 10, 3_600_000],
]

/** True for a CIDR ipaddr.js can use, such as 127.0.0.0/8 or ::1/128. */
function isCidr(text: string): boolean {
  try {
    ipaddr.parseCIDR(text)
    return true
  } catch {
    return false
  }
}

/** The topic pattern of src/notify/schemas.ts (Topic), repeated here because config sits below notify. */
const TOPIC = /^[a-z0-9_.:-]{1,200}$/
/** One RFC 1123 host name label: letters, digits and inner hyphens, at most 63 characters. */
const HOST_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i
/** Shortest accepted POSTBOX_TOKEN_SECRET: a short HMAC key can be brute-forced offline from any one token. */
export const MIN_TOKEN_SECRET_LENGTH = 32

/** True for an address the server can bind: an IPv4 or IPv6 literal, or an RFC 1123 host name. */
export function isBindableHost(host: string): boolean {
  if (ipaddr.IPv6.isValid(host)) return true
  // All-numeric labels are an IPv4 address or nothing (a top-level domain is never numeric).
  if (/^[\d.]+$/.test(host)) return ipaddr.IPv4.isValidFourPartDecimal(host)
  const name = host.endsWith('.') ? host.slice(0, -1) : host
  if (name.length === 0 || name.length > 253) return false
  const labels = name.split('.')
  return labels.every((l) => HOST_LABEL.test(l)) && !/^\d+$/.test(labels[labels.length - 1]!)
}

/**
 * The origin a CORS entry stands for (`https://app.example.com`, lower-cased, default port
 * dropped), `*` for any, or null when the entry is not a bare http(s) origin.
 */
export function normalizeOrigin(entry: string): string | null {
  if (entry === '*') return '*'
  if (entry.includes('*')) return null
  let url: URL
  try {
    url = new URL(entry)
  } catch {
    return null
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null
  // A path, query, fragment or user name would never match the Origin header a browser sends.
  return url.href === `${url.origin}/` ? url.origin : null
}

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']

/**
 * Checks the values, ranges and lists of a whole configuration (from the environment and flags
 * or from library options alike); throws a ConfigError naming the variable. Returns it with
 * the enumerations lower-cased and the CORS origins normalised.
 */
export function checkConfig(c: Config): Config {
  const synchronous = typeof c.synchronous === 'string' ? c.synchronous.toLowerCase() : c.synchronous
  if (synchronous !== 'normal' && synchronous !== 'full') {
    throw new ConfigError('POSTBOX_SYNCHRONOUS', `expected normal or full (option synchronous), got "${String(c.synchronous)}"`)
  }
  const logLevel = typeof c.logLevel === 'string' ? c.logLevel.toLowerCase() : c.logLevel
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('POSTBOX_LOG_LEVEL', `expected ${LOG_LEVELS.slice(0, -1).join(', ')} or silent (option logLevel), got "${String(c.logLevel)}"`)
  }
  if (c.smtpUrl !== null && (typeof c.smtpUrl !== 'string' || !/^smtps?:\/\/[^\s]+$/i.test(c.smtpUrl))) {
    throw new ConfigError('POSTBOX_SMTP_URL', 'expected smtp://host:port or smtps://user:pass@host:port (option smtpUrl)')
  }
  const from = c.emailFrom as unknown
  if (typeof from !== 'string' || (!/^[^\s@<>]+@[^\s@<>]+$/.test(from) && !/^[^<>]*<[^\s@<>]+@[^\s@<>]+>$/.test(from))) {
    throw new ConfigError('POSTBOX_EMAIL_FROM', `"${String(from)}" is not an email address (option emailFrom)`)
  }
  if (typeof c.metricsPublic !== 'boolean') throw new ConfigError('POSTBOX_METRICS_PUBLIC', `expected true or false (option metricsPublic), got ${JSON.stringify(c.metricsPublic)}`)
  for (const [field, variable] of [['dataDir', 'POSTBOX_DATA_DIR'], ['dbPath', 'POSTBOX_DB']] as const) {
    if (typeof c[field] !== 'string' || c[field] === '') throw new ConfigError(variable, `expected a path (option ${field})`)
  }
  if (c.adminKey !== null && typeof c.adminKey !== 'string') throw new ConfigError('POSTBOX_ADMIN_KEY', 'expected a string (option adminKey)')
  for (const [field, variable, min, max] of BOUNDS) {
    const v = c[field]
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
      throw new ConfigError(variable, `must be between ${min} and ${max} (option ${field}), got ${String(v)}`)
    }
  }
  if (!Array.isArray(c.allowNetworks)) throw new ConfigError('POSTBOX_ALLOW_NETWORKS', 'expected a list of CIDRs (option allowNetworks)')
  for (const cidr of c.allowNetworks) {
    if (typeof cidr !== 'string' || !isCidr(cidr)) throw new ConfigError('POSTBOX_ALLOW_NETWORKS', `"${String(cidr)}" is not a CIDR such as 127.0.0.0/8 or ::1/128`)
  }
  const schedules = [['retrySchedule', 'POSTBOX_RETRY_SCHEDULE'], ['notificationRetrySchedule', 'POSTBOX_NOTIFICATION_RETRY_SCHEDULE']] as const
  for (const [field, variable] of schedules) {
    const list = c[field] as unknown
    if (!Array.isArray(list) || list.length > 50 || !list.every((d) => typeof d === 'number' && Number.isFinite(d) && d >= 0)) {
      throw new ConfigError(variable, `expected at most 50 delays in milliseconds (option ${field})`)
    }
  }
  if (typeof c.host !== 'string' || !isBindableHost(c.host)) {
    throw new ConfigError('POSTBOX_HOST', `"${String(c.host)}" is not an IP address (such as 0.0.0.0 or ::) or a host name`)
  }
  if (c.tokenSecret !== null && (typeof c.tokenSecret !== 'string' || c.tokenSecret.length < MIN_TOKEN_SECRET_LENGTH)) {
    throw new ConfigError('POSTBOX_TOKEN_SECRET', `must be at least ${MIN_TOKEN_SECRET_LENGTH} characters (e.g. openssl rand -base64 32), or unset to generate one`)
  }
  const topics = c.mandatoryTopics as unknown
  if (!Array.isArray(topics)) throw new ConfigError('POSTBOX_MANDATORY_TOPICS', 'expected a list of topics (option mandatoryTopics)')
  for (const t of topics) {
    if (typeof t !== 'string' || !TOPIC.test(t)) throw new ConfigError('POSTBOX_MANDATORY_TOPICS', `"${String(t)}" is not a topic: use a-z, 0-9 and _ . : - (at most 200)`)
  }
  const corsOrigins = checkOrigins(c.corsOrigins, 'POSTBOX_CORS_ORIGINS', 'corsOrigins')
  const inboxOrigins = checkOrigins(c.inboxOrigins, 'POSTBOX_INBOX_ORIGINS', 'inboxOrigins')
  const portalOrigins = checkOrigins(c.portalOrigins, 'POSTBOX_PORTAL_ORIGINS', 'portalOrigins')
  const eventTypes = typeof c.eventTypes === 'string' ? (c.eventTypes.toLowerCase() as Config['eventTypes']) : (c.eventTypes ?? DEFAULTS.eventTypes)
  if (eventTypes !== 'open' && eventTypes !== 'strict') throw new ConfigError('POSTBOX_EVENT_TYPES', `expected open or strict (option eventTypes), got "${String(c.eventTypes)}"`)
  return { ...c, synchronous, logLevel, corsOrigins, inboxOrigins, portalOrigins, publicUrl: publicUrlOf(c), eventTypes }
}

/** Normalises a list of CORS origins (deduplicated), or throws a ConfigError naming `variable`. */
function checkOrigins(value: unknown, variable: string, option: string): string[] {
  const list = (value ?? []) as unknown
  if (!Array.isArray(list)) throw new ConfigError(variable, `expected a list of origins (option ${option})`)
  const origins = list.map((o: unknown) => {
    const origin = typeof o === 'string' ? normalizeOrigin(o) : null
    if (origin === null) throw new ConfigError(variable, `"${String(o)}" is not an origin such as https://app.example.com (scheme and host, no path), or *`)
    return origin
  })
  return [...new Set(origins)]
}

/**
 * POSTBOX_PUBLIC_URL without a trailing slash, or `http://<host>:<port>` when unset (127.0.0.1 for a
 * host of 0.0.0.0, brackets around an IPv6 address).
 */
function publicUrlOf(c: Config): string {
  const given = (c.publicUrl ?? '') as unknown
  if (typeof given !== 'string') throw new ConfigError('POSTBOX_PUBLIC_URL', 'expected a URL (option publicUrl)')
  if (given === '') {
    const host = c.host === '0.0.0.0' ? '127.0.0.1' : c.host === '::' ? '[::1]' : c.host.includes(':') ? `[${c.host}]` : c.host
    return `http://${host}:${c.port}`
  }
  let url: URL
  try {
    url = new URL(given)
  } catch {
    throw new ConfigError('POSTBOX_PUBLIC_URL', `"${given}" is not a URL such as https://postbox.example.com`)
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash || url.username) {
    throw new ConfigError('POSTBOX_PUBLIC_URL', `"${given}" must be an http(s) URL without query, fragment or credentials`)
  }
  return url.href.replace(/\/+$/, '')
}

/** Options in milliseconds, which library callers may also give as durations (`'20s'`). */
const DURATION_OPTIONS = new Set<string>(BOUNDS.map(([field]) => field).filter((f) => f.endsWith('Ms')))

/**
 * Library options (`Postbox.open`) as Config fields: an unknown name is refused (with the
 * option it most likely meant), durations may be given like the environment's (`'20s'`), and
 * retry schedules as a comma list or an array of durations. Values are then checked by
 * checkConfig like the environment's.
 */
export function configFromOptions(options: Record<string, unknown>, known: readonly string[]): Partial<Config> {
  const out: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(options)) {
    if (value === undefined) continue
    if (!known.includes(name)) {
      const guess = name === 'dbPath' ? 'db' : known.find((k) => k === `${name}Ms` || k.toLowerCase() === name.toLowerCase())
      throw new ConfigError('options', `unknown option "${name}"${guess ? ` (did you mean ${guess}?)` : ''}`)
    }
    if (name === 'dataDir' && (typeof value !== 'string' || value === '')) throw new ConfigError('POSTBOX_DATA_DIR', 'expected a path (option dataDir)')
    if (DURATION_OPTIONS.has(name) && typeof value === 'string') {
      const ms = parseDuration(value.trim())
      if (ms === null) throw new ConfigError('options', `${name}: expected milliseconds or a duration such as 500ms, 10s, 5m, 6h or 7d, got "${value}"`)
      out[name] = ms
    } else if ((name === 'retrySchedule' || name === 'notificationRetrySchedule') && (typeof value === 'string' || Array.isArray(value))) {
      const list = typeof value === 'string' ? parseDurationList(value) : value.map((d: unknown) => (typeof d === 'string' ? parseDuration(d.trim()) : d))
      if (list === null || list.includes(null)) throw new ConfigError('options', `${name}: expected delays in milliseconds or durations such as 500ms,2s,1m`)
      out[name] = list
    } else out[name] = value
  }
  return out as Partial<Config>
}

/** A configuration for tests and library mode: defaults, with overrides. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return Object.freeze({ ...loadConfig({}), ...overrides })
}
