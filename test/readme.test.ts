import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { SETTINGS, settingsTable } from '../src/config.js'

const ROOT = join(import.meta.dirname, '..')
const README_PATH = join(ROOT, 'README.md')
const README = readFileSync(README_PATH, 'utf8')
const DOCS = join(ROOT, 'docs')
const doc = (name: string): string => readFileSync(join(DOCS, name), 'utf8')
/** Every Markdown file of docs/, by name. */
const ALL_DOCS = readdirSync(DOCS).filter((f) => f.endsWith('.md'))
/** Pages other parts of this release write; linked from the README before they arrive. */
const ARRIVING = ['applications.md', 'notifications.md', 'requests.md', 'console.md']
/** Settings other parts of this release add (ported into SETTING_TABLE at merge). */
const ARRIVING_SETTINGS = ['POSTBOX_PUBLIC_URL', 'POSTBOX_EVENT_TYPES', 'POSTBOX_TRACK_CLICKS', 'POSTBOX_PORTAL_ORIGINS', 'POSTBOX_INBOX_ORIGINS']

/** Variables of the test suite and the benchmarks (docs/architecture.md, docs/performance.md), not settings of Postbox. */
const DEVELOPMENT_VARIABLES = ['POSTBOX_TEST_PG_URL', 'POSTBOX_REQUIRE_PG', 'POSTBOX_TEST_BACKEND', 'POSTBOX_BENCH_PG_URL', 'POSTBOX_BENCH_BASE_DIST']

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
    const known = new Set([...SETTINGS.map((s) => s.env), ...ARRIVING_SETTINGS, ...DEVELOPMENT_VARIABLES])
    for (const [name, text] of [['README.md', README], ...ALL_DOCS.map((f) => [f, doc(f)])] as const) {
      for (const v of new Set(text.match(/POSTBOX_[A-Z_]+/g) ?? [])) expect(known, `${v} in ${name}`).toContain(v)
    }
  })
})

describe('README: what a user needs first', () => {
  it('stays short: what it is, install, run, quickstart, configuration, links', () => {
    expect(README.split('\n').length).toBeLessThan(330)
    const headings = README.match(/^## .+$/gm) ?? []
    expect(headings).toEqual(expect.arrayContaining(['## Install', '## Run', '## Quickstart', '## Configuration', '## Documentation']))
  })

  it('shows a custom port and data directory, capturing the secret, and verifying a signature end to end', () => {
    expect(README).toMatch(/--port \d+ --data-dir \S+/)
    expect(README).toMatch(/SECRET=\$\(curl[^)]*\/v1\/endpoints/s)
    expect(README).toContain("req.headers['webhook-signature']")
    expect(README).toMatch(/createHmac\('sha256', key\)\.update\(`\$\{id\}\.\$\{timestamp\}\.\$\{body\}`\)/)
  })

  it('says that npm ci compiles a native module and what that needs', () => {
    expect(README).toMatch(/better-sqlite3/)
    expect(README).toMatch(/C\/C\+\+ toolchain/)
  })

  it('links every page of docs/ (and the pages arriving with this release), and every relative link resolves', () => {
    const linked = new Set([...README.matchAll(/\]\(docs\/([a-z0-9-]+\.md)\)/g)].map((m) => m[1]!))
    for (const f of [...ALL_DOCS, ...ARRIVING]) expect(linked, f).toContain(f)
    for (const [from, text] of [[README_PATH, README], ...ALL_DOCS.map((f) => [join(DOCS, f), doc(f)])] as const) {
      for (const [, target] of text.matchAll(/\]\(([^)#:\s]+\.md)(#[^)]*)?\)/g)) {
        const path = resolve(dirname(from), target!)
        if (ARRIVING.some((a) => path === join(DOCS, a))) continue
        expect(existsSync(path), `${target} linked from ${from}`).toBe(true)
      }
    }
  })
})

describe('docs/: what users asked for and could not find', () => {
  it('the recover body, when the breaker opens and for how long, and that a 3xx is final', () => {
    expect(doc('api.md')).toMatch(/"since": "[^"]+", "until": "[^"]+"/)
    expect(doc('api.md')).toMatch(/created\*\* in `\[since, until\)`/)
    const delivery = doc('delivery.md')
    expect(delivery).toMatch(/last 5 attempts failed and at least 80 % of its last\s+20 did/)
    expect(delivery).toMatch(/first pause is 30 s/)
    expect(delivery).toMatch(/up to 10 min/)
    expect(delivery).toMatch(/3xx is final/)
    expect(delivery).toContain('redirect_not_followed')
  })

  it('describes the strict query parameters and 405 of the API', () => {
    expect(doc('api.md')).toContain('Unknown query parameters are refused')
    expect(doc('api.md')).toContain('`method_not_allowed`')
  })

  it('has an architecture page with a map of every folder of src/', () => {
    const arch = doc('architecture.md')
    const folders = readdirSync(join(ROOT, 'src'), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name)
    for (const f of folders) expect(arch, f).toContain(`| \`${f}/\` |`)
  })

  it('no code comment cites the specification by section: they point at docs/', () => {
    // Built from parts, so this file does not cite itself.
    const CITATION = new RegExp(['SPEC', '§'].join(' '))
    const offenders: string[] = []
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name)
        if (e.isDirectory()) walk(p)
        else if (e.name.endsWith('.ts') && CITATION.test(readFileSync(p, 'utf8'))) offenders.push(p)
      }
    }
    for (const d of ['src', 'test', 'bench']) walk(join(ROOT, d))
    expect(offenders).toEqual([])
  })
})
