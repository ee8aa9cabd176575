import { join } from 'node:path'
import ipaddr from 'ipaddr.js'
import { bool, choice, duration, durations, int, list, settingError, SettingError, text, type Setting } from './config-kinds.js'

const DAY = 86_400_000
/** Retention settings may not be shorter than this (a sweep would delete work still in progress). */
const MIN_RETENTION_MS = 60_000
/** Timers Node cannot schedule beyond ~24.8 days fire at once; ten years bounds what is kept. */
const MAX_RETENTION_MS = 3650 * DAY

/**
 * Every setting, once: its variable, flag, default (with the reason it was chosen), range or
 * checks, and description, in the order of `--help` and the README's configuration table.
 * Parsing, defaults, bounds, library options, the CLI help and the README table all come from
 * here. Adding a setting is adding one entry (docs/architecture.md, "Adding a setting").
 */
export const SETTING_TABLE = {
  // The port the image exposes and the README documents.
  port: int({ env: 'POSTBOX_PORT', flag: '--port', default: 8080, min: 0, max: 65_535, description: 'HTTP port' }),
  // Loopback by default so a laptop install is not reachable from the network; the image sets 0.0.0.0.
  host: text({
    env: 'POSTBOX_HOST', flag: '--host', default: '127.0.0.1', description: 'Bind address (the Docker image sets 0.0.0.0)',
    validate: (h) => (isBindableHost(h) ? null : `"${h}" is not an IP address (such as 0.0.0.0 or ::) or a host name`),
  }),
  // Relative to the working directory, so `npm start` keeps everything in ./data.
  dataDir: text({ env: 'POSTBOX_DATA_DIR', flag: '--data-dir', default: './data', description: 'Directory for the database, the generated admin key and the token secret' }),
  dbPath: text({
    env: 'POSTBOX_DB', flag: '--db', default: 'data/postbox.db', docDefault: '<data dir>/postbox.db', description: 'SQLite database file',
    derive: (c) => join(String(c.dataDir), 'postbox.db'),
  }),
  // The shape of a key is checked where it is used (admin-key.ts).
  databaseUrl: text({
    env: 'POSTBOX_DATABASE_URL', flag: '--database-url', default: null, docDefault: '(SQLite file)',
    description: 'PostgreSQL instead of the SQLite file, e.g. postgres://user:pass@host:5432/postbox; many nodes may share it',
    validate: (u, option) => (/^postgres(ql)?:\/\/[^\s]+$/i.test(u) ? null : `expected postgres://user:pass@host:port/database (option ${option})`),
  }),
  // Named statements skip PostgreSQL's parse and plan on each call (docs/operations.md, "PostgreSQL").
  pgPreparedStatements: bool({
    env: 'POSTBOX_PG_PREPARED_STATEMENTS', flag: '--pg-prepared-statements', default: true,
    description: 'Named prepared statements on PostgreSQL; false behind a PgBouncer in transaction mode without max_prepared_statements',
  }),
  adminKey: text({ env: 'POSTBOX_ADMIN_KEY', flag: '--admin-key', default: null, docDefault: '(generated)', description: 'First admin key, used only when no admin key exists yet' }),
  allowNetworks: list({
    env: 'POSTBOX_ALLOW_NETWORKS', flag: '--allow-networks', noun: 'CIDRs',
    description: 'Comma list of CIDRs that webhooks may reach despite being non-public, e.g. 127.0.0.0/8,::1/128',
    item: (c) => (isCidr(c) ? c : settingError(`"${c}" is not a CIDR such as 127.0.0.0/8 or ::1/128`)),
  }),
  // 1s, 10s, 1m, 10m, 1h, 6h, 24h = 8 attempts over about 31 h (docs/delivery.md, "Retries").
  retrySchedule: durations({
    env: 'POSTBOX_RETRY_SCHEDULE', flag: '--retry-schedule', default: [1_000, 10_000, 60_000, 600_000, 3_600_000, 21_600_000, 86_400_000],
    docDefault: '1s,10s,1m,10m,1h,6h,24h', description: 'Webhook retry delays; attempts = delays + 1',
  }),
  // Notifications are more urgent and less valuable late: 6 attempts over ~1h11m.
  notificationRetrySchedule: durations({
    env: 'POSTBOX_NOTIFICATION_RETRY_SCHEDULE', flag: '--notification-retry-schedule', default: [1_000, 10_000, 60_000, 600_000, 3_600_000],
    description: 'Inbox and email retry delays',
  }),
  // NORMAL is durable across process crashes in WAL mode; FULL adds power-loss durability at ~2x commit cost.
  synchronous: choice({ env: 'POSTBOX_SYNCHRONOUS', flag: '--synchronous', default: 'normal', options: ['normal', 'full'], description: 'SQLite synchronous mode: normal or full (full survives power loss)' }),
  // info: one line per start/stop and per operator-relevant event, not per delivery.
  logLevel: choice({
    env: 'POSTBOX_LOG_LEVEL', flag: '--log-level', default: 'info', options: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'],
    description: 'trace, debug, info, warn, error, fatal or silent',
  }),
  smtpUrl: text({
    env: 'POSTBOX_SMTP_URL', flag: '--smtp-url', default: null, description: 'SMTP server for the email channel, e.g. smtp://user:pass@host:587',
    validate: (u, option) => (/^smtps?:\/\/[^\s]+$/i.test(u) ? null : `expected smtp://host:port or smtps://user:pass@host:port (option ${option})`),
  }),
  emailFrom: text({
    env: 'POSTBOX_EMAIL_FROM', flag: '--email-from', default: 'postbox@localhost', description: 'From address of notification emails',
    validate: (f, option) => (/^[^\s@<>]+@[^\s@<>]+$/.test(f) || /^[^<>]*<[^\s@<>]+@[^\s@<>]+>$/.test(f) ? null : `"${f}" is not an email address (option ${option})`),
  }),
  mandatoryTopics: list({
    env: 'POSTBOX_MANDATORY_TOPICS', flag: '--mandatory-topics', noun: 'topics',
    description: 'Comma list of topics (exact, or prefixes ending in ".") that skip preferences, quiet hours and digests',
    item: (t) => (TOPIC.test(t) ? t : settingError(`"${t}" is not a topic: use a-z, 0-9 and _ . : - (at most 200)`)),
  }),
  // 256 KiB covers real event payloads and bounds memory per request.
  maxBody: int({ env: 'POSTBOX_MAX_BODY', flag: '--max-body', default: 256 * 1024, min: 1024, max: 64 * 1024 * 1024, description: 'Largest accepted request body in bytes' }),
  // Metrics need a viewer key unless explicitly opened.
  metricsPublic: bool({ env: 'POSTBOX_METRICS_PUBLIC', flag: '--metrics-public', default: false, description: 'Serve /metrics without a key' }),
  // Successful deliveries are only interesting for about a week.
  retentionSuccessMs: duration({
    env: 'POSTBOX_RETENTION_SUCCESS', flag: '--retention-success', default: 7 * DAY, min: MIN_RETENTION_MS, max: MAX_RETENTION_MS,
    description: 'Keep successful deliveries and their attempts this long',
  }),
  // Dead and cancelled deliveries stay a month so they can be recovered.
  retentionDeadMs: duration({
    env: 'POSTBOX_RETENTION_DEAD', flag: '--retention-dead', default: 30 * DAY, min: MIN_RETENTION_MS, max: MAX_RETENTION_MS,
    description: 'Keep dead and cancelled deliveries this long',
  }),
  // Inbox messages older than a quarter are rarely opened.
  retentionInboxMs: duration({
    env: 'POSTBOX_RETENTION_INBOX', flag: '--retention-inbox', default: 90 * DAY, min: MIN_RETENTION_MS, max: MAX_RETENTION_MS,
    description: 'Keep inbox messages this long',
  }),
  // Events with no remaining deliveries are kept this long (for GET /v1/events/:id and dedup).
  retentionEventsMs: duration({
    env: 'POSTBOX_RETENTION_EVENTS', flag: '--retention-events', default: 7 * DAY, min: MIN_RETENTION_MS, max: MAX_RETENTION_MS,
    description: 'Keep events and notifications with no remaining deliveries this long',
  }),
  // A rotated secret keeps verifying for a day so receivers can roll over.
  secretGraceMs: duration({
    env: 'POSTBOX_SECRET_GRACE', flag: '--secret-grace', default: DAY, min: 0, max: 365 * DAY, docDefault: '24h',
    description: 'How long a rotated signing secret keeps being sent',
  }),
  requestTimeoutMs: duration({
    env: 'POSTBOX_REQUEST_TIMEOUT', flag: '--request-timeout', default: 15_000, min: 1000, max: 60_000,
    description: 'Default webhook request timeout (endpoints may set 1s-60s)',
  }),
  // Disable an endpoint after this long without a success (and >= 10 failures).
  disableAfterMs: duration({
    env: 'POSTBOX_DISABLE_AFTER', flag: '--disable-after', default: 5 * DAY, min: 60_000, max: 3650 * DAY,
    description: 'Disable an endpoint with no success for this long and at least 10 failures',
  }),
  // 80 %: an endpoint failing half of its requests keeps its traffic (docs/delivery.md, "Circuit breaker").
  breakerThreshold: int({
    env: 'POSTBOX_BREAKER_THRESHOLD', flag: '--breaker-threshold', default: 80, min: 1, max: 100,
    description: "Percent of an endpoint's last 20 attempts that must fail (the last 5 in a row) to open its breaker",
  }),
  // The first breaker pause; each further one doubles.
  breakerPauseMs: duration({
    env: 'POSTBOX_BREAKER_PAUSE', flag: '--breaker-pause', default: 30_000, min: 1000, max: 3_600_000,
    description: 'First breaker pause; each further one doubles',
  }),
  // The longest breaker pause; at most an hour (clock repair takes a longer pause for a clock error).
  breakerMaxPauseMs: duration({
    env: 'POSTBOX_BREAKER_MAX_PAUSE', flag: '--breaker-max-pause', default: 600_000, min: 1000, max: 3_600_000,
    description: 'Longest breaker pause (at most 1h)',
  }),
  // SIGTERM drains in-flight requests within this deadline.
  shutdownTimeoutMs: duration({
    env: 'POSTBOX_SHUTDOWN_TIMEOUT', flag: '--shutdown-timeout', default: 10_000, min: 0, max: DAY,
    description: 'Deadline to drain in-flight requests on SIGTERM/SIGINT',
  }),
  // 256 sockets keep 2 cores busy without exhausting file descriptors.
  concurrency: int({ env: 'POSTBOX_CONCURRENCY', flag: '--concurrency', default: 256, min: 1, max: 10_000, description: 'Global cap on in-flight deliveries' }),
  // Only scheduled retries wait on this timer; new work wakes the dispatcher on commit.
  pollIntervalMs: duration({
    env: 'POSTBOX_POLL_INTERVAL', flag: '--poll-interval', default: 250, min: 10, max: 3_600_000,
    description: 'Timer for scheduled retries (new work wakes the dispatcher at once)',
  }),
  tokenSecret: text({
    env: 'POSTBOX_TOKEN_SECRET', flag: '--token-secret', default: null, docDefault: '(generated)',
    description: 'Key that signs end-user inbox tokens (at least 32 characters); generated into <data dir>/token-secret.txt when unset',
    validate: (s) => (s.length >= MIN_TOKEN_SECRET_LENGTH ? null : `must be at least ${MIN_TOKEN_SECRET_LENGTH} characters (e.g. openssl rand -base64 32), or unset to generate one`),
  }),
  corsOrigins: list({
    env: 'POSTBOX_CORS_ORIGINS', flag: '--cors-origins', noun: 'origins',
    description: 'Comma list of browser origins allowed to call /v1 (CORS), e.g. https://app.example.com, or * for any',
    item: (o) => normalizeOrigin(o) ?? settingError(`"${o}" is not an origin such as https://app.example.com (scheme and host, no path), or *`),
  }),
  // Unset: the user-token routes answer any origin, as the inbox element runs on the operator's site (docs/inbox-element.md).
  inboxOrigins: list({
    env: 'POSTBOX_INBOX_ORIGINS', flag: '--inbox-origins', noun: 'origins', docDefault: '(any)',
    description: 'Comma list of browser origins allowed to call the user-token routes /v1/inbox… (CORS, for the inbox element); unset means any origin',
    item: (o) => normalizeOrigin(o) ?? settingError(`"${o}" is not an origin such as https://app.example.com (scheme and host, no path), or *`),
  }),
  // Unset: only Postbox's own pages may frame the portal (docs/console.md).
  portalOrigins: list({
    env: 'POSTBOX_PORTAL_ORIGINS', flag: '--portal-origins', noun: 'origins',
    description: 'Comma list of origins whose pages may embed /portal in an iframe, e.g. https://app.example.com (without it only Postbox itself may)',
    item: (o) => normalizeOrigin(o) ?? settingError(`"${o}" is not an origin such as https://app.example.com (scheme and host, no path), or *`),
  }),
  // Portal and click links start with it; unset, the server's own address (docs/applications.md).
  publicUrl: text({
    env: 'POSTBOX_PUBLIC_URL', flag: '--public-url', default: '', docDefault: 'http://<host>:<port>',
    description: 'Public base URL of this server, for portal and click links (127.0.0.1 when the host is 0.0.0.0)',
    validate: publicUrlProblem,
    normalize: (u) => new URL(u).href.replace(/\/+$/, ''),
    derive: (c) => defaultPublicUrl(String(c.host), Number(c.port)),
  }),
  // Tracked email links are opt-in: rewriting links changes what recipients see (docs/notifications.md).
  trackClicks: bool({
    env: 'POSTBOX_TRACK_CLICKS', flag: '--track-clicks', default: false,
    description: 'Rewrite email links to a notification’s action_url into tracked <public URL>/c/… links',
  }),
  // Open: any type is accepted and the catalog validates only the types it lists (docs/applications.md).
  eventTypes: choice({
    env: 'POSTBOX_EVENT_TYPES', flag: '--event-types', default: 'open', options: ['open', 'strict'],
    description: 'open, or strict: only event types in the catalog are accepted',
  }),
} satisfies Record<string, Setting<unknown>>

type Table = typeof SETTING_TABLE
type ValueOf<S> = S extends Setting<infer T> ? T : never

/** The validated, frozen runtime configuration: one field per entry of SETTING_TABLE. */
export type Config = { readonly [K in keyof Table]: ValueOf<Table[K]> }

/** The table's entries, typed. */
const ENTRIES = Object.entries(SETTING_TABLE) as [keyof Config, Setting<unknown>][]

/** Embedded defaults (SETTING_TABLE's, with `dbPath` under the default data directory). */
export const DEFAULTS: Config = Object.freeze(Object.fromEntries(ENTRIES.map(([k, s]) => [k, s.default])) as Config)

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
  /** The flag may stand alone (`--metrics-public`). */
  boolean: boolean
}

/** Every setting, in README order; the CLI's --help and the README table come from this list. */
export const SETTINGS: readonly SettingDoc[] = ENTRIES.map(([, s]) => ({
  env: s.env,
  flag: s.flag,
  default: s.docDefault,
  description: s.description,
  boolean: s.boolean,
}))

/** The README's configuration table (Markdown), generated from SETTINGS; test/readme.test.ts keeps it in sync. */
export function settingsTable(): string {
  const rows = SETTINGS.map((s) => `| \`${s.env}\` | \`${s.flag}\` | \`${s.default}\` | ${s.description} |`)
  return ['| variable | flag | default | description |', '| --- | --- | --- | --- |', ...rows].join('\n')
}

type Source = Record<string, string | undefined>

/** Runs `fn` and turns a SettingError into a ConfigError naming `variable`. */
function named<T>(variable: string, fn: () => T): T {
  try {
    return fn()
  } catch (err) {
    if (err instanceof SettingError) throw new ConfigError(variable, err.message)
    throw err
  }
}

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
    const alone = argv[i + 1] === undefined || argv[i + 1]!.startsWith('--')
    if (eq !== -1) out[setting.env] = arg.slice(eq + 1)
    else if (setting.boolean && alone) out[setting.env] = 'true'
    else if (alone) throw new ConfigError(setting.env, `${flag} needs a value`)
    else out[setting.env] = argv[++i]
  }
  return out
}

/** Loads, validates and freezes the configuration; flags win over environment variables. */
export function loadConfig(env: Source = process.env, argv: readonly string[] = []): Config {
  const src: Source = { ...env, ...flagsToEnv(argv) }
  const values: Record<string, unknown> = {}
  for (const [key, s] of ENTRIES) {
    const v = src[s.env]?.trim()
    if (v !== undefined && v !== '') values[key] = named(s.env, () => s.parse(v))
    else if (!s.derive) values[key] = s.default
  }
  // Derived defaults read the values above (`dbPath` from `dataDir`).
  for (const [key, s] of ENTRIES) if (!(key in values)) values[key] = s.derive!(values)
  return Object.freeze(checkConfig(values as Config))
}

/**
 * Checks the values, ranges and lists of a whole configuration (from the environment and flags
 * or from library options alike) with each setting's own check; throws a ConfigError naming the
 * variable. Returns it normalised (enumerations lower-cased, CORS origins as origins).
 */
export function checkConfig(c: Config): Config {
  const out: Record<string, unknown> = { ...c }
  for (const [key, s] of ENTRIES) out[key] = named(s.env, () => s.check(c[key], key))
  return out as Config
}

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
    const s = SETTING_TABLE[name as keyof Config] as Setting<unknown> | undefined
    if (name === 'dataDir' && (typeof value !== 'string' || value === '')) throw new ConfigError('POSTBOX_DATA_DIR', 'expected a path (option dataDir)')
    out[name] = s ? named('options', () => s.fromOption(value, name)) : value
  }
  return out as Partial<Config>
}

/** A configuration for tests and library mode: defaults, with overrides. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return Object.freeze({ ...loadConfig({}), ...overrides })
}

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

/** `http://<host>:<port>` of a bind address (127.0.0.1 for 0.0.0.0, [::1] for ::), the default public URL. */
export function defaultPublicUrl(host: string, port: number): string {
  // A zone (`fe80::1%eth0`) has no place in a URL: the link names the address alone.
  const h = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host.replace(/%.*$/, '')}]` : host
  return `http://${h}:${port}`
}

/** Why a POSTBOX_PUBLIC_URL cannot be used, or null: an http(s) URL without query, fragment or credentials. */
function publicUrlProblem(given: string): string | null {
  let url: URL
  try {
    url = new URL(given)
  } catch {
    return `"${given}" is not a URL such as https://postbox.example.com`
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash || url.username) {
    return `"${given}" must be an http(s) URL without query, fragment or credentials`
  }
  return null
}
