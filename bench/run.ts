/**
 * `npm run bench`: runs every benchmark suite in turn, then prints each headline figure next to
 * its target (docs/performance.md). Each suite measures Postbox next to a baseline in the same
 * run and reports the ratio, because shared machines are noisy; absolute numbers are context only.
 * `node dist/bench/run.js <suite>` runs one suite.
 */
import { availableParallelism, loadavg } from 'node:os'
import type { Figure } from './figures.js'

const suites: [string, string][] = [
  ['startup', './startup.js'],
  ['floor', './queue-floor.js'],
  ['store', './store.js'],
  ['webhooks', './webhooks.js'],
  ['growth', './growth.js'],
  ['notify', './notify.js'],
  ['inbox', './inbox.js'],
  ['api', './api.js'],
  ['apps', './apps.js'],
  ['requests', './requests.js'],
  ['pg', './pg.js'],
  ['pg-lean', './pg-lean.js'],
]

const only = process.argv[2]
const figures: Figure[] = []
const load = [loadavg()[0]!]
for (const [name, path] of suites) {
  if (only && only !== name) continue
  const mod = (await import(path)) as { run: () => Promise<Figure[] | unknown> }
  console.log(`\n=== ${name} ===`)
  const got = await mod.run()
  if (Array.isArray(got)) figures.push(...(got as Figure[]))
  load.push(loadavg()[0]!)
}
if (figures.length > 0) {
  console.log(`\n=== targets (this run; load average ${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)} on ${availableParallelism()} CPUs) ===`)
  console.log('| figure | this run | target | met |')
  console.log('| --- | --- | --- | --- |')
  for (const f of figures) console.log(`| ${f.measure} | ${f.value} | ${f.target} | ${f.met === null ? 'n/a' : f.met ? 'yes' : 'NO'} |`)
}
