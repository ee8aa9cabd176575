import { unwrap } from '../shared/api'
import { FilterForm } from '../shared/filter-form'
import { href, useLoad, useRoute, useSession } from '../shared/hooks'
import { usePagedList } from '../shared/paged-list'
import { PagedTable, Table } from '../shared/table'
import { Badge, Code, Facts, Field, Loading, Section, Time } from '../shared/ui'

/** Notifications newest first, filtered by topic and user. */
export function NotificationsPage() {
  const { api } = useSession()
  const { query } = useRoute()
  const topic = query.get('topic') || undefined
  const user = query.get('user_id') || undefined
  const { list, setCursor } = usePagedList(
    (cursor) => unwrap(api.GET('/v1/notifications', { params: { query: { topic, user_id: user, limit: 50, cursor } } })),
    [topic, user],
  )
  return (
    <>
      <Section title="Filter notifications">
        <FilterForm path="/notifications" names={['topic', 'user_id']} onApply={() => setCursor(undefined)}>
          <Field id="n-topic" label="Topic">
            <input id="n-topic" name="topic" value={topic ?? ''} />
          </Field>
          <Field id="n-user" label="User id">
            <input id="n-user" name="user_id" value={user ?? ''} />
          </Field>
        </FilterForm>
      </Section>
      <Section title="Notifications">
        <PagedTable
          state={list}
          onMore={setCursor}
          empty="No notifications."
          headings={['Notification', 'Topic', 'Recipients', 'Created']}
          row={(n) => (
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
          )}
        />
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
              <Table headings={['Recipient', 'Channel', 'Status', 'Reason', 'Delivered', 'Seen', 'Read', 'Clicked', 'Archived']}>
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
              </Table>
            </Section>
          </>
        )
      }}
    </Loading>
  )
}
