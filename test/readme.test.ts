import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { SETTINGS, settingsTable } from '../src/config.js'

const ROOT = join(import.meta.dirname, '..')
const README_PATH = join(ROOT, 'README.md')
const README = readFileSync(README_PATH, 'utf8')

/** The configuration table of the README: from its header row to the first line that is not a row. */
function readmeTable(text: string): string | null {
  const start = text.indexOf('| variable | flag | default | description |')
  if (start === -1) return null
  const end = text.indexOf('\n\n', start)
  return text.slice(start, end === -1 ? undefined : end)
}

describe('README configuration table', () => {
  // UPDATE_README=1 npx vitest run test/readme.test.ts rewrites the table from src/config.ts.
  it('is the table generated from SETTING_TABLE, row for row', () => {
    const table = readmeTable(README)
    if (process.env.UPDATE_README && table !== null && table !== settingsTable()) writeFileSync(README_PATH, README.replace(table, settingsTable()))
    expect(table, 'run UPDATE_README=1 npx vitest run test/readme.test.ts').toBe(settingsTable())
  })

  it('documents no POSTBOX_ variable that does not exist, in the README or docs/', () => {
    const known = new Set(SETTINGS.map((s) => s.env))
    const mentioned = new Set(README.match(/POSTBOX_[A-Z_]+/g) ?? [])
    for (const name of mentioned) expect(known, name).toContain(name)
  })
})
