import { useState } from 'preact/hooks'
import { unwrap, type Schemas } from '../shared/api'
import { href, useSession } from '../shared/hooks'
import { usePagedList } from '../shared/paged-list'
import { PagedTable } from '../shared/table'
import { ActionButton, Field, Reveal, Section, TextInput, Time } from '../shared/ui'

type App = Schemas['App']

/** Issues a portal link for one application (read-only or not) and shows it once. */
function PortalLink(props: { app: App }) {
  const { api } = useSession()
  const [readOnly, setReadOnly] = useState(false)
  const [link, setLink] = useState<Schemas['PortalToken'] | null>(null)
  const id = `ro-${props.app.id}`
  return (
    <div class="portal-link">
      <label class="check" for={id}>
        <input id={id} type="checkbox" checked={readOnly} onChange={(e) => setReadOnly((e.target as HTMLInputElement).checked)} /> read only
      </label>
      <ActionButton
        label="Issue portal link"
        testId={`portal-link-${props.app.id}`}
        run={() => unwrap(api.POST('/v1/apps/{id}/portal-tokens', { params: { path: { id: props.app.id } }, body: { read_only: readOnly } }))}
        onDone={(r) => setLink(r as Schemas['PortalToken'])}
      />
      {link && <Reveal label={`Portal link (expires ${new Date(link.expires_at).toLocaleString()}):`} value={link.url} />}
    </div>
  )
}

/** Applications (the operator's customers), with portal links. */
export function AppsPage() {
  const { api, canWrite } = useSession()
  const { list, setCursor } = usePagedList((cursor) => unwrap(api.GET('/v1/apps', { params: { query: { limit: 50, cursor } } })), [])
  const [name, setName] = useState('')
  const [appId, setAppId] = useState('')
  return (
    <>
      {canWrite && (
        <Section title="Add an application">
          <form class="inline-form" onSubmit={(e) => e.preventDefault()}>
            <Field id="app-name" label="Name">
              <TextInput id="app-name" required value={name} onInput={setName} />
            </Field>
            <Field id="app-id" label="Id (optional)">
              <TextInput id="app-id" value={appId} onInput={setAppId} placeholder="generated" />
            </Field>
            <ActionButton
              label="Create application"
              kind="primary"
              run={() => unwrap(api.POST('/v1/apps', { body: { name, ...(appId.trim() ? { id: appId.trim() } : {}) } }))}
              onDone={() => {
                setName('')
                setAppId('')
                list.reload()
              }}
            />
          </form>
        </Section>
      )}
      <Section title="Applications">
        <PagedTable
          state={list}
          onMore={setCursor}
          headings={['Application', 'Id', 'Endpoints', 'Created', canWrite && 'Portal']}
          row={(a) => (
            <tr key={a.id}>
              <td>{a.name}</td>
              <td>
                <code>{a.id}</code>
              </td>
              <td>
                <a href={href(`/endpoints?app_id=${encodeURIComponent(a.id)}`)}>{a.counts ? `${a.counts.endpoints} endpoints` : 'endpoints'}</a>
                {' · '}
                <a href={href(`/deliveries?app_id=${encodeURIComponent(a.id)}`)}>deliveries</a>
              </td>
              <td>
                <Time iso={a.created_at} />
              </td>
              {canWrite && (
                <td>
                  <PortalLink app={a} />
                </td>
              )}
            </tr>
          )}
        />
      </Section>
    </>
  )
}
