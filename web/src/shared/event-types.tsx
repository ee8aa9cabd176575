import { useState } from 'preact/hooks'
import { unwrap, type Schemas } from './api'
import { useSession } from './hooks'
import { usePagedList } from './paged-list'
import { ActionButton, Badge, Code, ErrorNotice, Field, Loading, More, Notice, Section, TextArea, TextInput } from './ui'


/** The event-type catalog: names, descriptions, schemas and examples; deprecated types marked. */
export function EventTypesPage() {
  const { api, canWrite, mode } = useSession()
  const [archived, setArchived] = useState(false)
  const { list, setCursor } = usePagedList(
    (cursor) => unwrap(api.GET('/v1/event-types', { params: { query: { limit: 50, cursor, ...(archived ? { include_archived: 'true' as const } : {}) } } })),
    [archived],
  )
  return (
    <>
      {canWrite && mode === 'console' && <EventTypeForm onSaved={list.reload} />}
      <Section
        title="Event types"
        actions={
          <label class="check">
            <input type="checkbox" checked={archived} onChange={(e) => setArchived((e.target as HTMLInputElement).checked)} /> Show archived
          </label>
        }
      >
        <Loading state={list}>
          {(page) =>
            page.data.length === 0 ? (
              <p class="muted">The catalog is empty.</p>
            ) : (
              <ul class="types">
                {page.data.map((t) => (
                  <li key={t.name} class="type">
                    <h3>
                      <code>{t.name}</code> {t.deprecated && <Badge value="deprecated" />} {t.archived && <Badge value="archived" />}
                    </h3>
                    {t.description && <p>{t.description}</p>}
                    {t.schema !== undefined && t.schema !== null && (
                      <details>
                        <summary>Schema</summary>
                        <Code value={t.schema} label={`Schema of ${t.name}`} />
                      </details>
                    )}
                    {t.example !== undefined && t.example !== null && (
                      <details>
                        <summary>Example</summary>
                        <Code value={t.example} label={`Example of ${t.name}`} />
                      </details>
                    )}
                  </li>
                ))}
              </ul>
            )
          }
        </Loading>
        <More cursor={list.data?.next_cursor} onMore={setCursor} />
      </Section>
    </>
  )
}

/** Creates or replaces a catalog entry (PUT /v1/event-types/:name). */
function EventTypeForm(props: { onSaved: () => void }) {
  const { api } = useSession()
  const [name, setName] = useState('')
  const [description, setDescription] = useState('')
  const [schema, setSchema] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [saved, setSaved] = useState<string | null>(null)
  const save = async (): Promise<void> => {
    setError(null)
    let parsed: Schemas['EventTypePut']['schema']
    if (schema.trim()) {
      try {
        parsed = JSON.parse(schema)
      } catch {
        throw new Error('The schema is not valid JSON')
      }
    }
    await unwrap(api.PUT('/v1/event-types/{name}', { params: { path: { name } }, body: { description, ...(parsed === undefined ? {} : { schema: parsed }) } }))
    setSaved(name)
    props.onSaved()
  }
  return (
    <Section title="Add or replace an event type">
      <form class="form" onSubmit={(e) => e.preventDefault()}>
        <Field id="et-name" label="Name">
          <TextInput id="et-name" required value={name} onInput={setName} placeholder="invoice.paid" />
        </Field>
        <Field id="et-description" label="Description">
          <TextInput id="et-description" value={description} onInput={setDescription} />
        </Field>
        <Field id="et-schema" label="JSON Schema of data (optional)">
          <TextArea id="et-schema" rows={4} value={schema} onInput={setSchema} />
        </Field>
        <ErrorNotice error={error} />
        <ActionButton label="Save event type" kind="primary" run={save} />
        {saved && <Notice kind="ok">Saved {saved}.</Notice>}
      </form>
    </Section>
  )
}
