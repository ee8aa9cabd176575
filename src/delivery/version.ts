import { readFileSync } from 'node:fs'
import { findPackageFile } from '../lib/package-file.js'

let cached: string | null = null

const readPackage = (path: string): { name?: string; version?: string } =>
  JSON.parse(readFileSync(path, 'utf8')) as { name?: string; version?: string }

/** Postbox's version from its package.json (works from src/ and dist/src/). */
export function packageVersion(): string {
  if (cached !== null) return cached
  const file = findPackageFile('package.json', (p) => readPackage(p).name === 'postbox')
  return (cached = (file && readPackage(file).version) || '0.0.0')
}
