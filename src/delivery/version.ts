import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

let cached: string | null = null

/** Postbox's version from package.json, found by walking up (works from src/ and dist/src/). */
export function packageVersion(): string {
  if (cached !== null) return cached
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 5; i++) {
    const file = join(dir, 'package.json')
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string }
      if (pkg.name === 'postbox' && pkg.version) return (cached = pkg.version)
    }
    dir = dirname(dir)
  }
  return (cached = '0.0.0')
}
