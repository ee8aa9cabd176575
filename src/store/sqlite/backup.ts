import { closeSync, existsSync, fsyncSync, openSync, readdirSync, realpathSync, renameSync, rmSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { basename, dirname, join, resolve } from 'node:path'
import type { Db } from './db.js'
import { processAlive } from '../../lib/process.js'

/** Options for `backupDatabase`. */
export interface BackupOptions {
  /** Pages copied per step; the event loop (and so the server's writes) runs between steps. */
  pagesPerStep?: number
}

/** Pages per backup step: ~400 KiB at 4 KiB pages, a few milliseconds of copying. */
export const BACKUP_PAGES_PER_STEP = 100

/** The backup target is the live database (or one of its companion files), or its directory is missing or not writable. */
export class BackupTargetError extends Error {}

/** `path` with symlinks resolved as far as it exists (a target file usually does not yet). */
function canonical(path: string): string {
  const abs = resolve(path)
  if (existsSync(abs)) return realpathSync.native(abs)
  const dir = dirname(abs)
  return existsSync(dir) ? join(realpathSync.native(dir), basename(abs)) : abs
}

/**
 * Writes a consistent copy of the live database to `toFile` with SQLite's online backup API.
 *
 * Consistency: the backup runs on the store's own connection, so writes the server makes through
 * that connection between steps are folded into the copy rather than restarting it; the result
 * is a snapshot as of the last step. Atomicity: the copy goes to a temporary file next to the
 * target, is fsynced, then renamed over the target (and the directory fsynced), so a kill at any
 * moment leaves either the complete old file, the complete new file, or no file at all.
 */
export async function backupDatabase(
  store: { readonly db: Db },
  toFile: string,
  opts: BackupOptions = {},
): Promise<{ pages: number }> {
  const target = resolve(toFile)
  // Renaming a copy over the live file would leave the server writing to an unlinked inode:
  // every write after that would be lost at the next start.
  const live = canonical(store.db.name)
  const resolved = canonical(target)
  if (['', '-wal', '-shm', '-journal'].some((suffix) => resolved === live + suffix)) {
    throw new BackupTargetError(`backup target ${toFile} is the live database (or one of its files); choose another path`)
  }
  const dir = dirname(target)
  const tmp = join(dir, `.${basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
  const step = Math.max(1, opts.pagesPerStep ?? BACKUP_PAGES_PER_STEP)
  removeStaleTemps(dir, basename(target))
  // Created empty and owner-only first: the copy holds signing secrets, like the database.
  createTemp(tmp, dir)
  try {
    const meta = await store.db.backup(tmp, { progress: () => step })
    fsyncPath(tmp, 'r+')
    renameSync(tmp, target)
    fsyncPath(dir, 'r')
    return { pages: meta.totalPages }
  } catch (err) {
    rmSync(tmp, { force: true })
    rmSync(`${tmp}-journal`, { force: true })
    throw err
  }
}

/** Creates the temporary file; a target directory that is missing or not writable is named as such. */
function createTemp(tmp: string, dir: string): void {
  try {
    closeSync(openSync(tmp, 'wx', 0o600))
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT') throw new BackupTargetError(`backup target directory ${dir} does not exist; create it first`)
    if (code === 'ENOTDIR') throw new BackupTargetError(`backup target directory ${dir} is not a directory`)
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
      throw new BackupTargetError(`backup target directory ${dir} is not writable (${code})`)
    }
    throw err
  }
}

/** Removes temporary files that killed backups of the same target left behind (their process is gone). */
function removeStaleTemps(dir: string, name: string): void {
  const prefix = `.${name}.`
  let entries: string[]
  try {
    entries = readdirSync(dir)
  } catch {
    return
  }
  for (const entry of entries) {
    if (!entry.startsWith(prefix)) continue
    const m = /^(\d+)\.[0-9a-f]{8}\.tmp(-journal)?$/.exec(entry.slice(prefix.length))
    if (m && !processAlive(Number(m[1]))) rmSync(join(dir, entry), { force: true })
  }
}

function fsyncPath(path: string, flags: 'r' | 'r+'): void {
  const fd = openSync(path, flags)
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}
