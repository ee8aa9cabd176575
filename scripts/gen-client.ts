import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript'
import { Postbox } from '../src/postbox.js'

/**
 * `npm run gen:client`: asks a real, in-process Postbox (a throwaway data directory, every
 * route mounted, nothing started) for its /openapi.json and turns it into the types of the
 * typed client, sdk/client/schema.d.ts. A test regenerates them in memory and compares, so a
 * route added without re-running this command fails `npm test`.
 */

/** The repository root (this file is scripts/gen-client.ts, or dist/scripts/gen-client.js once built). */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), import.meta.url.includes('/dist/scripts/') ? '../..' : '..')
/** Where the generated types live (committed). */
export const SCHEMA_FILE = join(ROOT, 'sdk', 'client', 'schema.d.ts')

/** The OpenAPI document the app serves at /openapi.json. */
export async function servedOpenApiDocument(): Promise<OpenAPI3> {
  const dir = mkdtempSync(join(tmpdir(), 'postbox-openapi-'))
  const pb = await Postbox.open({ dataDir: dir, bootstrapAdminKey: false })
  try {
    const res = await pb.app.request('/openapi.json')
    if (res.status !== 200) throw new Error(`/openapi.json answered ${res.status}`)
    return (await res.json()) as OpenAPI3
  } finally {
    await pb.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The TypeScript declarations openapi-typescript makes of `doc`, as written to schema.d.ts. */
export async function renderClientTypes(doc: OpenAPI3): Promise<string> {
  // openapi-typescript mutates what it is given: hand it a copy.
  const ast = await openapiTS(structuredClone(doc), { alphabetize: true })
  return COMMENT_HEADER + astToString(ast)
}

/** Regenerates the types from the served document. */
export async function generateClientTypes(): Promise<string> {
  return renderClientTypes(await servedOpenApiDocument())
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = await generateClientTypes()
  writeFileSync(SCHEMA_FILE, text)
  console.log(`wrote ${SCHEMA_FILE} (${text.length} bytes)`)
}
