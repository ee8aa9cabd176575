import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { chromium, type Browser, type Page } from 'playwright-core'

/** Debian's chromium (never a downloaded browser). */
export const CHROMIUM = '/usr/bin/chromium'

/** Launches headless chromium for one test file. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  })
}

const require = createRequire(import.meta.url)

/** axe-core's entry point as the page sees it (tests compile without the DOM library). */
interface AxeGlobal {
  axe: { run(context: unknown, options: unknown): Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown }[] }[] }> }
}
declare const window: AxeGlobal
declare const document: unknown
let axeSource: string | null = null

/** One axe-core violation, as the tests report it. */
export interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: string[]
}

/** Runs axe-core on the page (shadow roots included) and returns the serious and critical violations. */
export async function seriousA11yViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8')
  await page.addScriptTag({ content: axeSource })
  return page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] })
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => JSON.stringify(n.target)) }))
  })
}
