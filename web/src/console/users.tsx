import { useState } from 'preact/hooks'
import { unwrap } from '../shared/api'
import { href, useLoad, useSession } from '../shared/hooks'
import { Field, Loading, More, Section, TextInput, Time } from '../shared/ui'


/** Users, searchable by id, email or name. */
export function UsersPage() {
  const { api } = useSession()
  const [q, setQ] = useState('')
  const [search, setSearch] = useState('')
  const [cursor, setCursor] = useState<string | undefined>()
  const list = useLoad(
    () => unwrap(api.GET('/v1/users', { params: { query: { limit: 50, cursor, ...(search ? { q: search } : {}) } } })),
    [search, cursor],
  )
  return (
    <Section title="Users">
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault()
          setCursor(undefined)
          setSearch(q.trim())
        }}
      >
        <Field id="user-q" label="Search id, email or name">
          <TextInput id="user-q" type="search" value={q} onInput={setQ} />
        </Field>
        <button type="submit" class="btn btn-primary">
          Search
        </button>
      </form>
      <Loading state={list}>
        {(page) =>
          page.data.length === 0 ? (
            <p class="muted">No users.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">User</th>
                  <th scope="col">Name</th>
                  <th scope="col">Email</th>
                  <th scope="col">Roles and teams</th>
                  <th scope="col">Notifications</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {page.data.map((u) => (
                  <tr key={u.id}>
                    <td>
                      <code>{u.id}</code>
                    </td>
                    <td>{u.name ?? '—'}</td>
                    <td>{u.email ?? '—'}</td>
                    <td>{[...(u.roles ?? []).map((r) => `role:${r}`), ...(u.teams ?? []).map((t) => `team:${t}`)].join(', ') || '—'}</td>
                    <td>
                      <a href={href(`/notifications?user_id=${encodeURIComponent(u.id)}`)}>notifications</a>
                    </td>
                    <td>
                      <Time iso={u.updated_at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loading>
      <More cursor={list.data?.next_cursor} onMore={setCursor} />
    </Section>
  )
}
