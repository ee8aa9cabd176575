import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { SETTINGS } from '../src/config.js'

const README = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8')

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
