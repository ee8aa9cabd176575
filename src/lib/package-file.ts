import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Finds a file of the Postbox package (package.json, schema.sql) by walking up from this
 * module, so the same code works from src/ under vitest and from dist/src/ when built.
 * `accept` can reject a candidate (for example another package's package.json).
 */
export function findPackageFile(name: string, accept: (path: string) => boolean = () => true): string | null {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, name)
    if (existsSync(candidate) && accept(candidate)) return candidate
    const parent = dirname(dir)
    if (parent === dir) break
    dir = parent
  }
  return null
}
