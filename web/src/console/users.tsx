import { useState } from 'preact/hooks'
import { unwrap } from '../shared/api'
import { href, useSession } from '../shared/hooks'
import { usePagedList } from '../shared/paged-list'
import { PagedTable } from '../shared/table'
import { Field, Section, TextInput, Time } from '../shared/ui'

/** Users, searchable by id, email or name. */
export function UsersPage() {
  const { api } = useSession()
  const [q, setQ] = useState('')
  const [search, setSearch] = useState('')
  const { list, setCursor } = usePagedList(
    (cursor) => unwrap(api.GET('/v1/users', { params: { query: { limit: 50, cursor, ...(search ? { q: search } : {}) } } })),
    [search],
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
      <PagedTable
        state={list}
        onMore={setCursor}
        empty="No users."
        headings={['User', 'Name', 'Email', 'Roles and teams', 'Notifications', 'Updated']}
        row={(u) => (
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
        )}
      />
    </Section>
  )
}
