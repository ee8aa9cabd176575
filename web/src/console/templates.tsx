import { useEffect, useState } from 'preact/hooks'
import { describeError, unwrap, type Schemas } from '../shared/api'
import { useSession } from '../shared/hooks'
import { usePagedList } from '../shared/paged-list'
import { PagedTable } from '../shared/table'
import { ActionButton, Badge, Field, Notice, SelectInput, Section, TextArea, TextInput, Time } from '../shared/ui'

type Template = Schemas['Template']
type Preview = Schemas['TemplatePreview']
const CHANNELS = ['inbox', 'email', 'webhook'] as const
const FORMATS = ['text', 'markdown', 'html'] as const
type Channel = (typeof CHANNELS)[number]
type Format = (typeof FORMATS)[number]

/** Waits this long after the last keystroke before asking for a preview. */
const PREVIEW_DEBOUNCE_MS = 250

/** The rendered body: plain text as text, HTML in a sandboxed frame that runs no script. */
function Rendered(props: { preview: Preview }) {
  const p = props.preview
  return (
    <div class="preview" aria-live="polite">
      <p>
        <strong>Subject:</strong> <span data-testid="preview-title">{p.title}</span>
      </p>
      {p.format === 'text' ? (
        <pre class="code" data-testid="preview-body">
          {p.body}
        </pre>
      ) : (
        <iframe title="Rendered body" sandbox="" srcdoc={p.html} class="preview-frame" />
      )}
      {p.error && <Notice kind="error">The template failed and fell back to the raw text: {p.error}</Notice>}
    </div>
  )
}

/** Edits a template version with a live preview, and saves it as a new version. */
function Editor(props: { start: Partial<Template>; onSaved: () => void }) {
  const { api, canWrite } = useSession()
  const s = props.start
  const [topic, setTopic] = useState(s.topic ?? 'invoice.paid')
  const [channel, setChannel] = useState<Channel>((s.channel as Channel) ?? 'inbox')
  const [locale, setLocale] = useState(s.locale ?? 'en')
  const [subject, setSubject] = useState(s.subject ?? 'Invoice {{ payload.number }} paid')
  const [body, setBody] = useState(s.body ?? 'Thanks {{ recipient.name | default: "there" }}, we received {{ payload.amount }}.')
  const [format, setFormat] = useState<Format>((s.format as Format) ?? 'text')
  const [data, setData] = useState('{"number": "INV-1", "amount": "12.00 EUR"}')
  const [userId, setUserId] = useState('')
  const [preview, setPreview] = useState<Preview | null>(null)
  const [problem, setProblem] = useState<string | null>(null)
  const [saved, setSaved] = useState<string | null>(null)
  useEffect(() => {
    let payload: Record<string, unknown>
    try {
      const parsed: unknown = data.trim() ? JSON.parse(data) : {}
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error()
      payload = parsed as Record<string, unknown>
    } catch {
      setProblem('The sample data is not a JSON object.')
      return
    }
    const timer = setTimeout(() => {
      unwrap(
        api.POST('/v1/templates/preview', {
          body: { topic, channel, locale, data: payload, ...(userId.trim() ? { user_id: userId.trim() } : {}), template: { subject, body, format } },
        }),
      ).then(
        (p) => {
          setPreview(p)
          setProblem(null)
        },
        (e: unknown) => setProblem(describeError(e)),
      )
    }, PREVIEW_DEBOUNCE_MS)
    return () => clearTimeout(timer)
  }, [topic, channel, locale, subject, body, format, data, userId])
  return (
    <div class="editor">
      <form class="form" onSubmit={(e) => e.preventDefault()}>
        <div class="row">
          <Field id="t-topic" label="Topic">
            <TextInput id="t-topic" value={topic} onInput={setTopic} />
          </Field>
          <Field id="t-channel" label="Channel">
            <SelectInput id="t-channel" value={channel} onChange={setChannel} options={CHANNELS.map((c) => [c, c])} />
          </Field>
          <Field id="t-locale" label="Locale">
            <TextInput id="t-locale" value={locale} onInput={setLocale} />
          </Field>
          <Field id="t-format" label="Format">
            <SelectInput id="t-format" value={format} onChange={setFormat} options={FORMATS.map((f) => [f, f])} />
          </Field>
        </div>
        <Field id="t-subject" label="Subject (Liquid)">
          <TextInput id="t-subject" value={subject} onInput={setSubject} />
        </Field>
        <Field id="t-body" label="Body (Liquid)">
          <TextArea id="t-body" rows={6} value={body} onInput={setBody} />
        </Field>
        <div class="row">
          <Field id="t-data" label="Sample payload (JSON)">
            <TextArea id="t-data" rows={3} value={data} onInput={setData} />
          </Field>
          <Field id="t-user" label="Preview for user id (optional)">
            <TextInput id="t-user" value={userId} onInput={setUserId} />
          </Field>
        </div>
        {canWrite && (
          <ActionButton
            label="Save as a new version"
            kind="primary"
            run={() => unwrap(api.PUT('/v1/templates', { body: { topic, channel, locale, subject, body, format, active: true } }))}
            onDone={(t) => {
              setSaved(`Saved version ${(t as Template).version}.`)
              props.onSaved()
            }}
          />
        )}
        {saved && <Notice kind="ok">{saved}</Notice>}
      </form>
      <section aria-label="Live preview" class="card">
        <h3>Live preview</h3>
        {problem && <Notice kind="error">{problem}</Notice>}
        {preview && <Rendered preview={preview} />}
      </section>
    </div>
  )
}

/** Templates: every version, and the editor with its live preview. */
export function TemplatesPage() {
  const { api } = useSession()
  const { list, setCursor } = usePagedList((cursor) => unwrap(api.GET('/v1/templates', { params: { query: { limit: 50, cursor } } })), [])
  const [editing, setEditing] = useState<Partial<Template>>({})
  const [key, setKey] = useState(0)
  return (
    <>
      <Section title="Template editor">
        <Editor start={editing} key={key} onSaved={list.reload} />
      </Section>
      <Section title="Templates">
        <PagedTable
          state={list}
          onMore={setCursor}
          empty="No templates yet: notifications use their own title and body."
          headings={['Topic', 'Channel', 'Locale', 'Version', 'Format', 'State', 'Created', 'Open']}
          row={(t) => (
            <tr key={t.id}>
              <td>{t.topic}</td>
              <td>{t.channel}</td>
              <td>{t.locale}</td>
              <td>{t.version}</td>
              <td>{t.format}</td>
              <td>{t.active ? 'active' : <Badge value="inactive" />}</td>
              <td>
                <Time iso={t.created_at} />
              </td>
              <td>
                <button
                  type="button"
                  class="btn btn-plain"
                  onClick={() => {
                    setEditing(t)
                    setKey((k) => k + 1)
                  }}
                >
                  Edit {t.topic} v{t.version}
                </button>
              </td>
            </tr>
          )}
        />
      </Section>
    </>
  )
}
