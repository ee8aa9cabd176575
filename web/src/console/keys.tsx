import { useState } from 'preact/hooks'
import { unwrap } from '../shared/api'
import { useLoad, useSession } from '../shared/hooks'
import { ActionButton, Badge, Field, Loading, More, Reveal, Section, TextInput, Time } from '../shared/ui'

/** API keys: list, create (the key is shown once), revoke. */
export function KeysPage() {
  const { api, canWrite } = useSession()
  const [cursor, setCursor] = useState<string | undefined>()
  const list = useLoad(() => unwrap(api.GET('/v1/keys', { params: { query: { limit: 50, cursor } } })), [cursor])
  const [name, setName] = useState('')
  const [role, setRole] = useState<'admin' | 'publisher' | 'viewer'>('viewer')
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
              <select id="key-role" value={role} onChange={(e) => setRole((e.target as HTMLSelectElement).value as typeof role)}>
                <option value="viewer">viewer (read only)</option>
                <option value="publisher">publisher (send events)</option>
                <option value="admin">admin (everything)</option>
              </select>
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
        <Loading state={list}>
          {(page) => (
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Role</th>
                  <th scope="col">Prefix</th>
                  <th scope="col">Last used</th>
                  <th scope="col">State</th>
                  {canWrite && <th scope="col">Actions</th>}
                </tr>
              </thead>
              <tbody>
                {page.data.map((k) => (
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
