import { useState } from 'preact/hooks'
import { unwrap } from '../shared/api'
import { useSession } from '../shared/hooks'
import { usePagedList } from '../shared/paged-list'
import { PagedTable } from '../shared/table'
import { ActionButton, Badge, Field, Reveal, SelectInput, Section, TextInput, Time } from '../shared/ui'

/** API keys: list, create (the key is shown once), revoke. */
export function KeysPage() {
  const { api, canWrite } = useSession()
  const { list, setCursor } = usePagedList((cursor) => unwrap(api.GET('/v1/keys', { params: { query: { limit: 50, cursor } } })), [])
  const [name, setName] = useState('')
  const [role, setRole] = useState<'admin' | 'publisher' | 'viewer' | 'consumer'>('viewer')
  const [created, setCreated] = useState<string | null>(null)
  return (
    <>
      {canWrite && (
        <Section title="Create a key">
          <form class="inline-form" onSubmit={(e) => e.preventDefault()}>
            <Field id="key-name" label="Name">
              <TextInput id="key-name" value={name} onInput={setName} placeholder="billing-service" />
            </Field>
            <Field id="key-role" label="Role">
              <SelectInput
                id="key-role"
                value={role}
                onChange={setRole}
                options={[
                  ['viewer', 'viewer (read only)'],
                  ['publisher', 'publisher (send events)'],
                  ['consumer', 'consumer (claim from pull endpoints)'],
                  ['admin', 'admin (everything)'],
                ]}
              />
            </Field>
            <ActionButton
              label="Create key"
              kind="primary"
              run={() => unwrap(api.POST('/v1/keys', { body: { role, ...(name.trim() ? { name: name.trim() } : {}) } }))}
              onDone={(r) => {
                setCreated((r as { key: string }).key)
                list.reload()
              }}
            />
          </form>
          {created && <Reveal label="The new key (shown only now):" value={created} />}
        </Section>
      )}
      <Section title="Keys">
        <PagedTable
          state={list}
          onMore={setCursor}
          headings={['Name', 'Role', 'Prefix', 'Last used', 'State', canWrite && 'Actions']}
          row={(k) => (
            <tr key={k.id}>
              <td>{k.name}</td>
              <td>
                <Badge value={k.role} />
              </td>
              <td>
                <code>{k.prefix}…</code>
              </td>
              <td>
                <Time iso={k.last_used_at} />
              </td>
              <td>{k.revoked ? <Badge value="revoked" /> : 'active'}</td>
              {canWrite && (
                <td>
                  {!k.revoked && (
                    <ActionButton
                      label="Revoke"
                      kind="danger"
                      confirm={`Revoke the key ${k.name}? Whatever uses it stops working at once.`}
                      run={() => unwrap(api.DELETE('/v1/keys/{id}', { params: { path: { id: k.id } } }))}
                      onDone={list.reload}
                    />
                  )}
                </td>
              )}
            </tr>
          )}
        />
      </Section>
    </>
  )
}
