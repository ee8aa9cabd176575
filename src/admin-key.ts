import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createApiKey, hashKey, isKeyShaped } from './auth/keys.js'
import { ConfigError, type Config } from './config.js'
import type { Log } from './log.js'
import type { Store } from './store/index.js'

/** The file a generated first admin key is written to, inside the data directory. */
export const ADMIN_KEY_FILE = 'admin-key.txt'

/** What `ensureAdminKey` did. */
export type AdminKeyBootstrap = { action: 'none' } | { action: 'from_env'; id: string } | { action: 'generated'; id: string; file: string }

/** Narrows a file that holds a secret back to 0600 if someone loosened it (as the database's files are). */
function narrowToOwner(file: string): void {
  try {
    chmodSync(file, 0o600)
  } catch {
    // missing, or owned by someone else: nothing to narrow, or not ours to
  }
}

/** Throws a ConfigError when POSTBOX_ADMIN_KEY is set but is not shaped like a Postbox key. */
export function checkAdminKeySetting(config: Config): void {
  if (config.adminKey !== null && !isKeyShaped(config.adminKey)) {
    throw new ConfigError('POSTBOX_ADMIN_KEY', 'must be "pbk_" followed by 20 to 200 characters of A-Z a-z 0-9 _ -')
  }
}

/**
 * First-start rules of docs/api.md. With no active admin key: POSTBOX_ADMIN_KEY becomes the first
 * admin key when set; otherwise a key is generated and written to `<data dir>/admin-key.txt`
 * with mode 0600. Only the path is logged, never the key.
 */
export async function ensureAdminKey(store: Store, config: Config, log: Log, now: number): Promise<AdminKeyBootstrap> {
  if ((await store.keys.countActiveAdmins()) > 0) {
    narrowToOwner(join(config.dataDir, ADMIN_KEY_FILE))
    if (config.adminKey !== null) {
      const row = await store.keys.byHash(hashKey(config.adminKey))
      // The same key set on every start is the normal case; a different one (an attempt to
      // replace the admin key through the environment) would otherwise be ignored silently.
      if (!row || row.role !== 'admin' || row.revokedAt !== null) {
        log.warn('POSTBOX_ADMIN_KEY is set but is not an active admin key here, and was ignored: it only creates the first admin key; use `postbox keys create --role admin` to add one')
      }
    }
    return { action: 'none' }
  }
  if (config.adminKey !== null) {
    checkAdminKeySetting(config)
    const adminKey = config.adminKey
    const hash = hashKey(adminKey)
    const isActiveAdmin = (r: { role: string; revokedAt: number | null } | null | undefined) => !!r && r.role === 'admin' && r.revokedAt === null
    // Several nodes on one PostgreSQL database may start at once with the same key: the one that
    // loses the race finds the key created (or hits its unique hash) and has nothing to do.
    let created: Awaited<ReturnType<typeof createApiKey>> | null
    try {
      created = await store.tx(async (s) => {
        const existing = await s.keys.byHash(hash)
        if (isActiveAdmin(existing)) return null
        if (existing) throw new ConfigError('POSTBOX_ADMIN_KEY', 'this key already exists with another role or was revoked')
        return createApiKey(s, { name: 'admin', role: 'admin', key: adminKey }, now)
      })
    } catch (err) {
      if (err instanceof ConfigError || !isActiveAdmin(await store.keys.byHash(hash))) throw err
      created = null
    }
    if (created === null) return { action: 'none' }
    log.info({ keyId: created.row.id }, 'created the first admin key from POSTBOX_ADMIN_KEY')
    return { action: 'from_env', id: created.row.id }
  }
  mkdirSync(config.dataDir, { recursive: true })
  const file = join(config.dataDir, ADMIN_KEY_FILE)
  const { row } = await store.tx(async (s) => {
    const created = await createApiKey(s, { name: 'admin', role: 'admin' }, now)
    // Written inside the transaction: if the file cannot be written, the key is not created.
    writeFileSync(file, `${created.key}\n`, { mode: 0o600 })
    chmodSync(file, 0o600)
    return created
  })
  log.info({ keyId: row.id, file }, 'generated the first admin key; read it from the file')
  return { action: 'generated', id: row.id, file }
}
