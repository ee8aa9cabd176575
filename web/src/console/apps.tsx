import { useState } from 'preact/hooks'
import { loose, unwrap } from '../shared/api'
import { useLoad, useSession } from '../shared/hooks'
import { ActionButton, Field, Loading, More, Reveal, Section, TextInput, Time } from '../shared/ui'

/** An application as GET /v1/apps lists it. */
interface App {
  id: string
  name: string
  created_at?: string
}

/** Issues a portal link for one application (read-only or not) and shows it once. */
function PortalLink(props: { app: App }) {
  const { api } = useSession()
  const [readOnly, setReadOnly] = useState(false)
  const [link, setLink] = useState<{ url: string; expires_at: string } | null>(null)
  const id = `ro-${props.app.id}`
  return (
    <div class="portal-link">
      <label class="check" for={id}>
        <input id={id} type="checkbox" checked={readOnly} onChange={(e) => setReadOnly((e.target as HTMLInputElement).checked)} /> read only
      </label>
      <ActionButton
        label="Issue portal link"
        testId={`portal-link-${props.app.id}`}
        run={() => unwrap(loose(api).POST('/v1/apps/{id}/portal-tokens', { params: { path: { id: props.app.id } }, body: { read_only: readOnly } }))}
        onDone={(r) => setLink(r as { url: string; expires_at: string })}
      />
      {link && <Reveal label={`Portal link (expires ${new Date(link.expires_at).toLocaleString()}):`} value={link.url} />}
    </div>
  )
}

/** Applications (the operator's customers), with portal links. */
export function AppsPage() {
  const { api, canWrite } = useSession()
  const [cursor, setCursor] = useState<string | undefined>()
  const list = useLoad(() => unwrap(loose(api).GET('/v1/apps', { params: { query: { limit: 50, cursor } } })) as Promise<{ data: App[]; next_cursor: string | null }>, [cursor])
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
              run={() => unwrap(loose(api).POST('/v1/apps', { body: { name, ...(appId.trim() ? { id: appId.trim() } : {}) } }))}
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
        <Loading state={list}>
          {(page) => (
            <table>
              <thead>
                <tr>
                  <th scope="col">Application</th>
                  <th scope="col">Id</th>
                  <th scope="col">Created</th>
                  {canWrite && <th scope="col">Portal</th>}
                </tr>
              </thead>
              <tbody>
                {page.data.map((a) => (
                  <tr key={a.id}>
                    <td>{a.name}</td>
                    <td>
                      <code>{a.id}</code>
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
                ))}
              </tbody>
            </table>
          )}
        </Loading>
        <More cursor={list.data?.next_cursor} onMore={setCursor} />
      </Section>
    </>
  )
}
