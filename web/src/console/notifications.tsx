import { useState } from 'preact/hooks'
import { unwrap } from '../shared/api'
import { href, navigate, useLoad, useRoute, useSession } from '../shared/hooks'
import { Badge, Code, Facts, Field, Loading, More, Section, Time } from '../shared/ui'


/** Notifications newest first, filtered by topic and user. */
export function NotificationsPage() {
  const { api } = useSession()
  const { query } = useRoute()
  const topic = query.get('topic') || undefined
  const user = query.get('user_id') || undefined
  const [cursor, setCursor] = useState<string | undefined>()
  const list = useLoad(
    () => unwrap(api.GET('/v1/notifications', { params: { query: { topic, user_id: user, limit: 50, cursor } } })),
    [topic, user, cursor],
  )
  return (
    <>
      <Section title="Filter notifications">
        <form
          class="inline-form"
          onSubmit={(ev) => {
            ev.preventDefault()
            const f = new FormData(ev.target as HTMLFormElement)
            const q = new URLSearchParams()
            for (const k of ['topic', 'user_id']) {
              const v = String(f.get(k) ?? '').trim()
              if (v) q.set(k, v)
            }
            setCursor(undefined)
            navigate(`/notifications?${q}`)
          }}
        >
          <Field id="n-topic" label="Topic">
            <input id="n-topic" name="topic" value={topic ?? ''} />
          </Field>
          <Field id="n-user" label="User id">
            <input id="n-user" name="user_id" value={user ?? ''} />
          </Field>
          <button type="submit" class="btn btn-primary">
            Apply
          </button>
        </form>
      </Section>
      <Section title="Notifications">
        <Loading state={list}>
          {(page) =>
            page.data.length === 0 ? (
              <p class="muted">No notifications.</p>
            ) : (
              <table>
                <thead>
                  <tr>
                    <th scope="col">Notification</th>
                    <th scope="col">Topic</th>
                    <th scope="col">Recipients</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((n) => (
                    <tr key={n.id}>
                      <td>
                        <a href={href(`/notifications/${n.id}`)}>
                          <code>{n.id}</code>
                        </a>
                      </td>
                      <td>{n.topic}</td>
                      <td>{n.recipients}</td>
                      <td>
                        <Time iso={n.created_at} />
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
    </>
  )
}

/** One notification: per recipient and channel, its status, the reason it was suppressed, and its receipts. */
export function NotificationPage(props: { id: string }) {
  const { api } = useSession()
  const n = useLoad(
    () => unwrap(api.GET('/v1/notifications/{id}', { params: { path: { id: props.id } } })),
    [props.id],
  )
  return (
    <Loading state={n}>
      {(x) => {
        const rows = x.receipts
        return (
          <>
            <p>
              <a href={href('/notifications')}>← Notifications</a>
            </p>
            <Section title={`Notification ${x.id}`}>
              <Facts
                rows={[
                  ['Topic', x.topic],
                  ['Created', <Time key="c" iso={x.created_at} />],
                ]}
              />
              <details>
                <summary>Request</summary>
                <Code value={x.request} label="The notification request" />
              </details>
            </Section>
            <Section title="Recipients and receipts">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Recipient</th>
                    <th scope="col">Channel</th>
                    <th scope="col">Status</th>
                    <th scope="col">Reason</th>
                    <th scope="col">Delivered</th>
                    <th scope="col">Seen</th>
                    <th scope="col">Read</th>
                    <th scope="col">Clicked</th>
                    <th scope="col">Archived</th>
                  </tr>
                </thead>
                <tbody>
                  {rows.map((r, i) => (
                    <tr key={`${r.recipient}|${r.channel}|${i}`}>
                      <td>{r.recipient}</td>
                      <td>{r.channel}</td>
                      <td>
                        <Badge value={r.status} />
                      </td>
                      <td>{r.reason ?? '—'}</td>
                      <td>
                        <Time iso={r.delivered_at} />
                      </td>
                      <td>
                        <Time iso={r.seen_at} />
                      </td>
                      <td>
                        <Time iso={r.read_at} />
                      </td>
                      <td>
                        <Time iso={r.clicked_at} />
                      </td>
                      <td>
                        <Time iso={r.archived_at} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </Section>
          </>
        )
      }}
    </Loading>
  )
}
