import { unwrap, type Api } from './api'
import { FilterForm } from './filter-form'
import { attemptsText } from './format'
import { href, useLoad, useRoute, useSession } from './hooks'
import { usePagedList } from './paged-list'
import { EventTypeInput } from './pickers'
import { PagedTable, Table } from './table'
import { Badge, Code, Facts, Field, Loading, Section, Time } from './ui'

/** Events newest first, filtered by type (`#/events?type=invoice.paid`). */
export function EventsPage() {
  const { api } = useSession()
  const { query } = useRoute()
  const type = query.get('type') || undefined
  const { list, setCursor } = usePagedList((cursor) => unwrap(api.GET('/v1/events', { params: { query: { type, limit: 50, cursor } } })), [type])
  return (
    <>
      <Section title="Filter events">
        <FilterForm path="/events" names={['type']} onApply={() => setCursor(undefined)}>
          <Field id="ev-type" label="Event type">
            <EventTypeInput id="ev-type" name="type" value={type ?? ''} />
          </Field>
        </FilterForm>
      </Section>
      <Section title="Events">
        <PagedTable
          state={list}
          onMore={setCursor}
          empty="No events."
          headings={['Event', 'Type', 'Client id', 'Created']}
          row={(e) => (
            <tr key={e.id}>
              <td>
                <a href={href(`/events/${e.id}`)}>
                  <code>{e.id}</code>
                </a>
              </td>
              <td>{e.type}</td>
              <td>{e.client_id ?? '—'}</td>
              <td>
                <Time iso={e.created_at} />
              </td>
            </tr>
          )}
        />
      </Section>
    </>
  )
}

/** The URL of each endpoint id (read one by one); an endpoint deleted since is left out. */
async function endpointUrls(api: Api, ids: string[]): Promise<Map<string, string>> {
  const found = await Promise.all(
    [...new Set(ids)].map((id) =>
      unwrap(api.GET('/v1/endpoints/{id}', { params: { path: { id } } })).then(
        (e) => [id, e.url] as const,
        () => null,
      ),
    ),
  )
  return new Map(found.filter((f) => f !== null))
}

/** One event: its payload and its deliveries, each with its endpoint's URL. */
export function EventPage(props: { id: string }) {
  const { api } = useSession()
  const ev = useLoad(() => unwrap(api.GET('/v1/events/{id}', { params: { path: { id: props.id } } })), [props.id])
  const urls = useLoad(() => endpointUrls(api, (ev.data?.deliveries ?? []).flatMap((d) => (d.endpoint_id ? [d.endpoint_id] : []))), [ev.data])
  return (
    <Loading state={ev}>
      {(e) => (
        <>
          <p>
            <a href={href('/events')}>← Events</a>
          </p>
          <Section title={`Event ${e.id}`}>
            <Facts
              rows={[
                ['Type', e.type],
                ['Client id', e.client_id ?? '—'],
                ['Ordering key', e.ordering_key ?? '—'],
                ['Created', <Time key="c" iso={e.created_at} />],
              ]}
            />
            <Code value={e.data} label="Event payload" />
          </Section>
          <Section title="Deliveries">
            {e.deliveries.length === 0 ? (
              <p class="muted">No endpoint subscribed to this event.</p>
            ) : (
              <Table headings={['Delivery', 'Endpoint', 'Status', 'Attempts']}>
                {e.deliveries.map((d) => (
                  <tr key={d.id}>
                    <td>
                      <a href={href(`/deliveries/${d.id}`)}>
                        <code>{d.id}</code>
                      </a>
                    </td>
                    <td>
                      {d.endpoint_id ? (
                        <a href={href(`/endpoints/${d.endpoint_id}`)}>{urls.data?.get(d.endpoint_id) ?? <code>{d.endpoint_id}</code>}</a>
                      ) : (
                        '—'
                      )}
                    </td>
                    <td>
                      <Badge value={d.status} />
                    </td>
                    <td>{attemptsText(d)}</td>
                  </tr>
                ))}
              </Table>
            )}
          </Section>
        </>
      )}
    </Loading>
  )
}
