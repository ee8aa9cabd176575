import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { SETTINGS } from '../src/config.js'

const ROOT = join(import.meta.dirname, '..')
const DOCS = join(ROOT, 'docs')
/** The README and the docs/ pages it links to, where a feature's settings may be documented. */
const README = [join(ROOT, 'README.md'), ...(existsSync(DOCS) ? readdirSync(DOCS).filter((f) => f.endsWith('.md')).map((f) => join(DOCS, f)) : [])]
  .map((f) => readFileSync(f, 'utf8'))
  .join('\n')

describe('README configuration table', () => {
  it('has one row per setting, matching SETTINGS exactly (variable, flag, default, description)', () => {
    for (const s of SETTINGS) {
      expect(README).toContain(`| \`${s.env}\` | \`${s.flag}\` | \`${s.default}\` | ${s.description} |`)
    }
  })

  it('documents no POSTBOX_ variable that does not exist', () => {
    const known = new Set(SETTINGS.map((s) => s.env))
    const mentioned = new Set(README.match(/POSTBOX_[A-Z_]+/g) ?? [])
    for (const name of mentioned) expect(known, name).toContain(name)
  })
})
