import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { beforeAll, describe, expect, it } from 'vitest'
import { ensureWebBuilt, WEB_DIST } from './support/web-pages.js'

/** The console's budget: everything its page loads, gzipped (docs/console.md). */
const CONSOLE_BUDGET_BYTES = 200 * 1024

/** Every script and style sheet a built page loads: its tags, then each script's static and dynamic imports. */
function loadedFiles(page: string): string[] {
  const html = readFileSync(join(WEB_DIST, page), 'utf8')
  const todo = [...html.matchAll(/(?:src|href)="\/assets\/([^"]+)"/g)].map((m) => m[1]!)
  const seen = new Set<string>()
  while (todo.length) {
    const name = todo.pop()!
    if (seen.has(name)) continue
    seen.add(name)
    if (!name.endsWith('.js')) continue
    const js = readFileSync(join(WEB_DIST, 'assets', name), 'utf8')
    for (const m of js.matchAll(/(?:from|import)\s*\(?\s*["']\.\/([^"']+)["']/g)) todo.push(m[1]!)
  }
  return [...seen]
}

describe('web budgets', () => {
  beforeAll(async () => ensureWebBuilt(), 120_000)

  it('the console loads at most 200 KB gzipped, all its scripts and styles together', () => {
    const files = loadedFiles('console.html')
    expect(files.some((f) => f.endsWith('.js'))).toBe(true)
    expect(files.some((f) => f.endsWith('.css'))).toBe(true)
    const gzipped = files.reduce((sum, f) => sum + gzipSync(readFileSync(join(WEB_DIST, 'assets', f)), { level: 9 }).length, 0)
    expect(gzipped).toBeLessThanOrEqual(CONSOLE_BUDGET_BYTES)
  })

  it('asset names carry a content hash (so they may be cached as immutable)', () => {
    for (const f of [...loadedFiles('console.html'), ...loadedFiles('portal.html')]) expect(f).toMatch(/-[A-Za-z0-9_-]{8}\.(js|css)$/)
  })
})
