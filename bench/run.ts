/**
 * `npm run bench`: runs every benchmark suite in turn and prints a table of results.
 * Each suite measures Postbox next to a baseline in the same run and reports the ratio,
 * because shared machines are noisy; absolute numbers are context only.
 */
const suites: [string, string][] = [
  ['store', './store.js'],
  ['webhooks', './webhooks.js'],
  ['notify', './notify.js'],
  ['inbox', './inbox.js'],
  ['api', './api.js'],
  ['apps', './apps.js'],
]

const only = process.argv[2]
for (const [name, path] of suites) {
  if (only && only !== name) continue
  const mod = (await import(path)) as { run: () => Promise<void> }
  console.log(`\n=== ${name} ===`)
  await mod.run()
}
