#!/usr/bin/env node
import { accessSync, constants, existsSync, realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { AppError } from './errors.js'
import { checkAdminKeySetting } from './admin-key.js'
import { createApiKey, keyJson } from './auth/keys.js'
import { checkArity, parseArgs, usage, UsageError, type ParsedArgs } from './cli-args.js'
import { ConfigError, loadConfig, type Config } from './config.js'
import { createLogger, silentLogger } from './log.js'
import { BackupTargetError, backupDatabase } from './store/sqlite/backup.js'
import { PgBackupUnsupportedError } from './store/pg/backup.js'
import { redactPgUrl } from './store/pg/url.js'
import { openDatabase, schemaVersion } from './store/sqlite/db.js'
import { SchemaOutdatedError, SchemaTooNewError, SCHEMA_VERSION } from './store/schema.js'
import { openProtectedStore } from './data-files.js'
import { createStatsStore } from './store/sqlite/stats.js'
import { DELIVERY_LEASE } from './delivery/lease.js'
import { describeLease } from './delivery/lease.js'
import { circuitState } from './delivery/breaker.js'
import type { KeyRole } from './store/keys.js'

const out = (v: unknown): void => void process.stdout.write(typeof v === 'string' ? `${v}\n` : `${JSON.stringify(v, null, 2)}\n`)

/** Runs one CLI invocation; resolves with the exit code (serve resolves once listening). */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let args: ParsedArgs
  let config: Config
  try {
    args = parseArgs(argv)
    if (args.help || args.positionals.length === 0 || args.positionals[0] === 'help') {
      out(usage())
      return args.help || args.positionals[0] === 'help' ? 0 : 2
    }
    checkArity(args.positionals)
    config = loadConfig(env, argv)
  } catch (err) {
    if (err instanceof ConfigError || err instanceof UsageError) {
      process.stderr.write(`postbox: ${err.message}\n${err instanceof UsageError ? '\n' + usage() : ''}`)
      return 2
    }
    throw err
  }
  const [command, ...rest] = args.positionals
  const pgUrl = config.databaseUrl
  if (pgUrl !== null && (command === 'backup' || command === 'migrate' || command === 'check')) return runOnPg(command, pgUrl, config)
  try {
    return await run(command!, rest, args.flags, config)
  } catch (err) {
    if (err instanceof ConfigError || err instanceof UsageError) {
      process.stderr.write(`postbox: ${err.message}\n`)
      return 2
    }
    if (err instanceof SchemaOutdatedError) {
      process.stderr.write(`postbox: ${config.dbPath}: ${err.message}; stop any older Postbox serving this file before that\n`)
      return 2
    }
    if (err instanceof AppError) {
      process.stderr.write(`postbox: ${err.code}: ${err.message}${err.details ? ` ${JSON.stringify(err.details)}` : ''}\n`)
      return 1
    }
    process.stderr.write(`postbox: ${err instanceof Error ? err.message : String(err)}\n`)
    return 1
  }
}

async function run(command: string, rest: string[], flags: Record<string, string>, config: Config): Promise<number> {
  switch (command) {
    case 'serve': {
      // Loaded on demand so the short commands start without the HTTP stack.
      const { runServer } = await import('./server.js')
      await runServer(config, createLogger(config.logLevel))
      return -1
    }
    case 'migrate': {
      const before = existsSync(config.dbPath) ? readVersion(config.dbPath) : 0
      const store = await openProtectedStore(config, { schema: 'migrate' })
      const after = schemaVersion(store.sqlite!.db)
      await store.close()
      out(`database ${config.dbPath}: schema version ${before} -> ${after}`)
      return 0
    }
    case 'backup': {
      if (rest.length !== 1) throw new UsageError('backup needs exactly one <file>')
      if (!existsSync(config.dbPath)) throw new UsageError(`database ${config.dbPath} does not exist: nothing to back up`)
      // Copied as found, never upgraded: a backup taken before an upgrade must open in the
      // version that wrote it, and a file an older server still serves must stay at its schema.
      const db = openDatabase(config.dbPath, { readonly: true, schema: 'any' })
      try {
        const version = schemaVersion(db)
        const { pages } = await backupDatabase({ db }, rest[0]!).catch((err: unknown) => {
          throw err instanceof BackupTargetError ? new UsageError(err.message) : err
        })
        out(`backup written to ${rest[0]} (${pages} pages, schema version ${version})`)
      } finally {
        db.close()
      }
      return 0
    }
    case 'keys':
      return keys(rest, flags, config)
    case 'send': {
      if (rest.length !== 2) throw new UsageError('send needs <type> <json>')
      let data: unknown
      try {
        data = JSON.parse(rest[1]!)
      } catch {
        throw new UsageError('<json> is not valid JSON')
      }
      // Postbox.open upgrades the schema; a short command must not (docs/operations.md, "Upgrades, backup and restore").
      requireDatabase(config, 'send')
      openDatabase(config.dbPath, { readonly: true, schema: 'current' }).close()
      const { Postbox } = await import('./postbox.js')
      const pb = await Postbox.open({ config, log: silentLogger() })
      try {
        out(await pb.events.send({ type: rest[0]!, data: data as Record<string, unknown> }))
      } finally {
        await pb.close()
      }
      return 0
    }
    case 'send-request':
      return sendRequest(rest[0]!, flags, config)
    case 'stats': {
      requireDatabase(config, 'stats')
      const store = await openProtectedStore(config, { schema: 'current' })
      try {
        const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString())
        const [lock, deliveries, apps, requests, oldestPendingCreatedAt, nextDueAt, endpoints] = await Promise.all([
          store.locks?.get(DELIVERY_LEASE) ?? null,
          store.deliveries.countByStatus(),
          store.apps.countsByApp(),
          store.requests.countByStatus(),
          store.stats.oldestPendingCreatedAt(),
          store.deliveries.oldestPendingAt(),
          store.stats.endpointHealth(1000),
        ])
        const now = Date.now()
        out({
          database: config.dbPath,
          // The delivery lease (docs/operations.md): the process claiming from this file, since and
          // until when; `expired` when its holder stopped renewing (a standby takes it over).
          dispatcher: lock && describeLease(lock, now),
          deliveries,
          // The same counts per application (docs/applications.md).
          apps: deliveriesByApp(apps),
          // Durable HTTP requests (docs/requests.md), per status: they are deliveries too.
          requests,
          // When the oldest pending delivery was accepted, and the earliest time one is due (in the
          // past: how far the queue is behind; in the future: only retries and held rows wait).
          oldest_pending_at: iso(oldestPendingCreatedAt),
          next_due_at: iso(nextDueAt),
          endpoints: endpoints.map((e) => ({
            id: e.id,
            app_id: e.appId,
            url: e.url,
            disabled: e.disabled,
            disabled_reason: e.disabledReason,
            // As the API shows it: the end of a pause still holding the endpoint's rows.
            paused_until: e.pausedUntil !== null && e.pausedUntil > now ? new Date(e.pausedUntil).toISOString() : null,
            circuit: circuitState(e, now),
            consecutive_failures: e.consecutiveFailures,
            last_success_at: e.lastSuccessAt === null ? null : new Date(e.lastSuccessAt).toISOString(),
            pending: e.pending,
          })),
        })
      } finally {
        await store.close()
      }
      return 0
    }
    case 'check':
      return check(config)
    default:
      throw new UsageError(`unknown command "${command}"`)
  }
}

/** `{app_id: {pending, in_flight, success, dead, cancelled}}` from per-application counts. */
function deliveriesByApp(rows: { appId: string; status: string; n: number }[]): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {}
  for (const r of rows) (out[r.appId] ??= { pending: 0, in_flight: 0, success: 0, dead: 0, cancelled: 0 })[r.status] = r.n
  return out
}

/**
 * Refuses a command that needs an existing database when there is none at the configured path:
 * a mistyped --data-dir must not create a file no server reads (an event sent into it would
 * never be delivered).
 */
function requireDatabase(config: Config, command: string): void {
  if (!existsSync(config.dbPath)) {
    throw new UsageError(`${command}: no database at ${config.dbPath} (check --data-dir / POSTBOX_DATA_DIR, or start \`postbox serve\` there first)`)
  }
}

async function keys(rest: string[], flags: Record<string, string>, config: Config): Promise<number> {
  // Only `keys create` may start a new file (an admin key provisioned before the first start).
  const isNew = !existsSync(config.dbPath)
  if (rest[0] !== 'create') requireDatabase(config, `keys ${rest[0] ?? ''}`.trim())
  const store = await openProtectedStore(config, { schema: 'current' })
  if (isNew) process.stderr.write(`postbox: created a new database at ${config.dbPath}\n`)
  try {
    const [sub, id] = rest
    if (sub === 'create') {
      const role = flags.role
      if (role !== 'admin' && role !== 'publisher' && role !== 'viewer' && role !== 'consumer') throw new UsageError('keys create needs --role admin|publisher|viewer|consumer')
      const appId = flags.app
      const { row, key } = await store.tx(async (s) => {
        if (appId !== undefined && !(await s.apps.exists(appId))) throw new UsageError(`keys create: no application ${appId} (create it with POST /v1/apps)`)
        return createApiKey(s, { name: flags.name ?? role, role: role as KeyRole, appId: appId ?? null }, Date.now())
      })
      out({ ...keyJson(row), key })
      return 0
    }
    if (sub === 'list') {
      out((await store.keys.list({ limit: 10_000 })).data.map(keyJson))
      return 0
    }
    if (sub === 'revoke' && id) {
      await store.tx(async (s) => {
        const target = await s.keys.get(id)
        if (!target) throw new AppError('not_found', 404, `Key ${id} not found`)
        if (target.revokedAt !== null) return
        if (target.role === 'admin' && target.appId === null && (await s.keys.countActiveAdmins()) <= 1) {
          throw new AppError('last_admin', 409, 'The last active admin key cannot be revoked')
        }
        await s.keys.revoke(id, Date.now())
      })
      out({ revoked: true })
      return 0
    }
    throw new UsageError('keys create --role R [--name N] | keys list | keys revoke <id>')
  } finally {
    await store.close()
  }
}

/** `postbox send-request <url> …`: enqueues one durable HTTP request and prints it. */
async function sendRequest(url: string, flags: Record<string, string>, config: Config): Promise<number> {
  const headers: Record<string, string> = {}
  for (const line of flags.header?.split('\n') ?? []) {
    const colon = line.indexOf(':')
    if (colon <= 0) throw new UsageError(`--header needs "name: value", got ${JSON.stringify(line)}`)
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim()
  }
  if (flags.body !== undefined && flags['json-body'] !== undefined) throw new UsageError('give --body or --json-body, not both')
  let body: unknown = flags.body
  if (flags['json-body'] !== undefined) {
    try {
      body = JSON.parse(flags['json-body'])
    } catch {
      throw new UsageError('--json-body is not valid JSON')
    }
  }
  requireDatabase(config, 'send-request')
  openDatabase(config.dbPath, { readonly: true, schema: 'current' }).close()
  const { Postbox } = await import('./postbox.js')
  const pb = await Postbox.open({ config, log: silentLogger() })
  try {
    // --app names the request's application, as for `keys create` (it used to be ignored).
    const appId = flags.app
    if (appId !== undefined) {
      try {
        await pb.apps.get(appId)
      } catch {
        throw new UsageError(`send-request: no application ${appId} (create it with POST /v1/apps)`)
      }
    }
    const input = {
      url,
      ...(flags.method !== undefined ? { method: flags.method.toUpperCase() } : {}),
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      ...(body !== undefined ? { body } : {}),
      ...(flags.delay !== undefined ? { delay: flags.delay } : {}),
      ...(flags['dedup-key'] !== undefined ? { dedup_key: flags['dedup-key'] } : {}),
      ...(appId !== undefined ? { app_id: appId } : {}),
    }
    out(await pb.requests.create(input))
  } finally {
    await pb.close()
  }
  return 0
}

function readVersion(path: string): number {
  const db = openDatabase(path, { readonly: true })
  try {
    return schemaVersion(db)
  } finally {
    db.close()
  }
}

async function check(config: Config): Promise<number> {
  checkAdminKeySetting(config)
  out(`configuration: ok (port ${config.port}, data dir ${config.dataDir})`)
  if (!existsSync(config.dbPath)) {
    out(`database ${config.dbPath}: does not exist yet; it will be created at start`)
    return 0
  }
  const db = openDatabase(config.dbPath, { readonly: true })
  try {
    const version = schemaVersion(db)
    const problems = createStatsStore(db).integrityCheck()
    if (problems.length > 0) {
      process.stderr.write(`database ${config.dbPath}: integrity check failed:\n${problems.join('\n')}\n`)
      return 1
    }
    accessSync(config.dbPath, constants.R_OK | constants.W_OK)
    const note =
      version < SCHEMA_VERSION
        ? `; schema ${version} will be upgraded to ${SCHEMA_VERSION} by \`postbox migrate\` or \`serve\`: stop any older Postbox serving this file first`
        : ''
    out(`database ${config.dbPath}: ok (schema version ${version}, writable${note})`)
    return 0
  } finally {
    db.close()
  }
}

/** `backup`, `migrate` and `check` on PostgreSQL (docs/operations.md, "Upgrades, backup and restore"): backup refuses with a pointer to pg_dump. */
async function runOnPg(command: 'backup' | 'migrate' | 'check', url: string, config: Config): Promise<number> {
  try {
    if (command === 'backup') {
      process.stderr.write(`postbox: ${new PgBackupUnsupportedError(url).message}\n`)
      return 2
    }
    // The PostgreSQL commands load `pg`: imported only when they run.
    const { checkPgDatabase, migratePgDatabase } = await import('./store/pg/commands.js')
    if (command === 'migrate') {
      const { from, to } = await migratePgDatabase(url)
      out(`database ${redactPgUrl(url)}: schema version ${from} -> ${to}`)
      return 0
    }
    checkAdminKeySetting(config)
    out(`configuration: ok (port ${config.port}, database ${redactPgUrl(url)})`)
    const report = await checkPgDatabase(url)
    if (report.problems.length > 0) {
      process.stderr.write(`${report.line}:\n${report.problems.join('\n')}\n`)
      return 1
    }
    out(report.line)
    return 0
  } catch (err) {
    process.stderr.write(`postbox: ${redactPgUrl(url)}: ${err instanceof Error ? err.message : String(err)}\n`)
    return err instanceof ConfigError || err instanceof SchemaTooNewError ? 2 : 1
  }
}

function invokedDirectly(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))
  } catch {
    return false
  }
}

if (invokedDirectly()) {
  // Everything this program writes (database, WAL, backups, key files) holds secrets: owner-only.
  process.umask(0o077)
  main(process.argv.slice(2)).then(
    (code) => {
      if (code >= 0) process.exit(code)
    },
    (err: unknown) => {
      process.stderr.write(`postbox: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
      process.exit(1)
    },
  )
}
