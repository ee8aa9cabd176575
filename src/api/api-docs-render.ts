/**
 * A readable API reference rendered from the OpenAPI document: one static HTML page (a table of
 * contents by tag, every operation with its parameters, body and answers, then every schema),
 * with no script and one style sheet, so it fits the pages' Content-Security-Policy and needs
 * nothing from the network. Pure: the document in, the page out.
 */

type Obj = Record<string, unknown>

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
const obj = (v: unknown): Obj => (isObj(v) ? v : {})
const str = (v: unknown): string => (typeof v === 'string' ? v : '')

/** Escapes text for HTML content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!)
}

/** One line of text, escaped, with markdown's `code` spans as <code>. */
const inline = (text: string): string => escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>')

/** Text with markdown's `code` spans and paragraphs, escaped; nothing else of markdown is read. */
function prose(text: string): string {
  if (!text) return ''
  return text
    .split(/\n{2,}/)
    .map((p) => `<p>${inline(p)}</p>`)
    .join('')
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const
const schemaAnchor = (name: string): string => `schema-${name.replace(/[^A-Za-z0-9_.-]/g, '_')}`
const refName = (ref: string): string => ref.slice(ref.lastIndexOf('/') + 1)

/** A schema as a short type expression (`string (date-time)`, `Endpoint[]`, `"a" | "b"`), linking named schemas. */
export function typeOf(schema: unknown, depth = 0): string {
  const s = obj(schema)
  if (typeof s.$ref === 'string') {
    const name = refName(s.$ref)
    return `<a href="#${schemaAnchor(name)}">${escapeHtml(name)}</a>`
  }
  if (depth > 4) return 'object'
  for (const key of ['oneOf', 'anyOf'] as const) if (Array.isArray(s[key])) return (s[key] as unknown[]).map((x) => typeOf(x, depth + 1)).join(' | ')
  if (Array.isArray(s.allOf)) return (s.allOf as unknown[]).map((x) => typeOf(x, depth + 1)).join(' &amp; ')
  if (s.const !== undefined) return `<code>${escapeHtml(JSON.stringify(s.const))}</code>`
  if (Array.isArray(s.enum)) return s.enum.map((v) => `<code>${escapeHtml(JSON.stringify(v))}</code>`).join(' | ')
  const types = Array.isArray(s.type) ? (s.type as unknown[]).map(str) : [str(s.type)]
  return types
    .map((t) => {
      if (t === 'array') return `${typeOf(s.items, depth + 1)}[]`
      if (t === 'string' && typeof s.format === 'string') return `string (${escapeHtml(s.format)})`
      if (t === 'object' || (t === '' && isObj(s.properties))) return 'object'
      return escapeHtml(t || 'any')
    })
    .join(' | ')
}

/** A table of an object schema's properties: name, type, required, description. */
function propertiesTable(schema: Obj): string {
  const props = obj(schema.properties)
  const names = Object.keys(props)
  if (names.length === 0) return ''
  const required = new Set(Array.isArray(schema.required) ? (schema.required as unknown[]).map(str) : [])
  const rows = names.map((n) => {
    const p = obj(props[n])
    const note = [str(p.description), p.example !== undefined ? `example: \`${JSON.stringify(p.example)}\`` : ''].filter(Boolean).join(' — ')
    return `<tr><td><code>${escapeHtml(n)}</code></td><td>${typeOf(p)}</td><td>${required.has(n) ? 'yes' : ''}</td><td>${prose(note)}</td></tr>`
  })
  return `<table><thead><tr><th>field</th><th>type</th><th>required</th><th>description</th></tr></thead><tbody>${rows.join('')}</tbody></table>`
}

/** A body's schema: its type, and its fields when it is given inline rather than by name. */
function bodySchema(schema: unknown): string {
  const s = obj(schema)
  return `<p>${typeOf(s)}</p>${typeof s.$ref === 'string' ? '' : propertiesTable(s)}`
}

/** One operation's section. */
function operation(method: string, path: string, op: Obj): string {
  const id = str(op.operationId) || `${method}-${path}`
  const security = Array.isArray(op.security) && op.security.length === 0 ? '<p class="muted">No key needed.</p>' : ''
  const params = (Array.isArray(op.parameters) ? op.parameters : []).map(obj)
  const paramRows = params.map(
    (p) => `<tr><td><code>${escapeHtml(str(p.name))}</code></td><td>${escapeHtml(str(p.in))}</td><td>${typeOf(p.schema)}</td><td>${p.required === true ? 'yes' : ''}</td><td>${prose(str(p.description) || str(obj(p.schema).description))}</td></tr>`,
  )
  const paramTable = paramRows.length
    ? `<h4>Parameters</h4><table><thead><tr><th>name</th><th>in</th><th>type</th><th>required</th><th>description</th></tr></thead><tbody>${paramRows.join('')}</tbody></table>`
    : ''
  const body = obj(op.requestBody)
  const bodyParts = Object.entries(obj(body.content)).map(([type, media]) => `<h4>Body <code>${escapeHtml(type)}</code></h4>${bodySchema(obj(media).schema)}`)
  const responses = Object.entries(obj(op.responses)).map(([code, r]) => {
    const res = obj(r)
    const media = Object.entries(obj(res.content))
    const schema = media.length ? ` — ${media.map(([type, m]) => `${typeOf(obj(m).schema)} <span class="muted">${escapeHtml(type)}</span>`).join(', ')}` : ''
    return `<li><code>${escapeHtml(code)}</code> ${inline(str(res.description))}${schema}</li>`
  })
  return `<section class="op" id="${escapeHtml(id)}"><h3><span class="method ${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></h3>
<p class="summary">${inline(str(op.summary))}</p>${prose(str(op.description))}${security}${paramTable}${bodyParts.join('')}<h4>Answers</h4><ul>${responses.join('')}</ul></section>`
}

/** The whole reference page for `doc` (an OpenAPI 3.1 document), linking `stylesheet`. */
export function renderApiDocs(doc: unknown, stylesheet: string): string {
  const d = obj(doc)
  const info = obj(d.info)
  const byTag = new Map<string, string[]>()
  const toc = new Map<string, string[]>()
  for (const [path, item] of Object.entries(obj(d.paths))) {
    for (const method of METHODS) {
      const op = obj(obj(item)[method])
      if (Object.keys(op).length === 0) continue
      const tag = Array.isArray(op.tags) && typeof op.tags[0] === 'string' ? op.tags[0] : 'other'
      if (!byTag.has(tag)) {
        byTag.set(tag, [])
        toc.set(tag, [])
      }
      byTag.get(tag)!.push(operation(method, path, op))
      const id = str(op.operationId) || `${method}-${path}`
      toc.get(tag)!.push(`<li><a href="#${escapeHtml(id)}"><span class="method ${method}">${method.toUpperCase()}</span> ${escapeHtml(path)}</a></li>`)
    }
  }
  const schemas = Object.entries(obj(obj(d.components).schemas))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, s]) => `<section class="schema" id="${schemaAnchor(name)}"><h3>${escapeHtml(name)}</h3>${prose(str(obj(s).description))}<p>${typeOf({ ...obj(s), description: undefined })}</p>${propertiesTable(obj(s))}</section>`)
  const tags = [...byTag.keys()]
  const title = `${str(info.title) || 'API'} ${str(info.version)}`.trim()
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} reference</title><link rel="stylesheet" href="${escapeHtml(stylesheet)}"></head>
<body><header><h1>${escapeHtml(title)}</h1>${prose(str(info.description))}
<p>Send <code>Authorization: Bearer pbk_…</code> (an API key) unless an operation says otherwise. The machine-readable document: <a href="/openapi.json">/openapi.json</a>. The console: <a href="/console">/console</a>.</p></header>
<nav aria-label="Operations"><h2>Operations</h2>${tags.map((t) => `<h3><a href="#tag-${escapeHtml(t)}">${escapeHtml(t)}</a></h3><ul>${toc.get(t)!.join('')}</ul>`).join('')}<h3><a href="#schemas">schemas</a></h3></nav>
<main>${tags.map((t) => `<section id="tag-${escapeHtml(t)}"><h2>${escapeHtml(t)}</h2>${byTag.get(t)!.join('\n')}</section>`).join('\n')}
<section id="schemas"><h2>Schemas</h2>${schemas.join('\n')}</section></main></body></html>
`
}

/** The page's style sheet (served from /docs/style.css: the policy allows no inline style). */
export const API_DOCS_CSS = `body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d2430;display:grid;grid-template-columns:minmax(14rem,20rem) 1fr;grid-template-areas:"head head" "nav main"}
header{grid-area:head;padding:1rem 2rem;border-bottom:1px solid #dde2ea}nav{grid-area:nav;padding:0 1rem;border-right:1px solid #dde2ea;font-size:13px;position:sticky;top:0;align-self:start;max-height:100vh;overflow:auto}
nav ul{list-style:none;padding:0;margin:0}nav h3{margin:1rem 0 .25rem;text-transform:capitalize}nav a{text-decoration:none;color:inherit}
main{grid-area:main;padding:0 2rem;min-width:0}h2{text-transform:capitalize;border-bottom:2px solid #dde2ea;padding-top:1rem}
.op,.schema{border-bottom:1px solid #eef1f5;padding:.5rem 0 1rem}.summary{font-weight:600}.muted{color:#5b6575}
table{border-collapse:collapse;font-size:13px;margin:.25rem 0;width:100%}th,td{border:1px solid #dde2ea;padding:.25rem .5rem;text-align:left;vertical-align:top}td p{margin:0}
code{font:13px ui-monospace,monospace;background:#f3f5f8;padding:0 .2rem;border-radius:3px;overflow-wrap:anywhere}
.method{display:inline-block;min-width:3.5rem;font:700 11px ui-monospace,monospace;color:#fff;background:#5b6575;border-radius:3px;text-align:center;padding:1px 4px}
.get{background:#1f6f43}.post{background:#1f4f8f}.patch,.put{background:#8a5a00}.delete{background:#9b1c1c}
@media (max-width:50rem){body{display:block}nav{border:0;position:static;max-height:none}}`
