import { useState } from 'preact/hooks'
import { unwrap } from './api'
import { href, navigate, useLoad, useRoute, useSession } from './hooks'
import { Badge, Code, Facts, Field, Loading, More, Section, Time } from './ui'

/** Events newest first, filtered by type (`#/events?type=invoice.paid`). */
export function EventsPage() {
  const { api } = useSession()
  const { query } = useRoute()
  const type = query.get('type') || undefined
  const [cursor, setCursor] = useState<string | undefined>()
  const list = useLoad(() => unwrap(api.GET('/v1/events', { params: { query: { type, limit: 50, cursor } } })), [type, cursor])
  return (
    <>
      <Section title="Filter events">
        <form
          class="inline-form"
          onSubmit={(ev) => {
            ev.preventDefault()
            const t = String(new FormData(ev.target as HTMLFormElement).get('type') ?? '').trim()
            setCursor(undefined)
            navigate(t ? `/events?type=${encodeURIComponent(t)}` : '/events')
          }}
        >
          <Field id="ev-type" label="Event type">
            <input id="ev-type" name="type" value={type ?? ''} />
          </Field>
          <button type="submit" class="btn btn-primary">
            Apply
          </button>
        </form>
      </Section>
      <Section title="Events">
        <Loading state={list}>
          {(page) =>
            page.data.length === 0 ? (
              <p class="muted">No events.</p>
            ) : (
              <table>
                <thead>
                  <tr>
                    <th scope="col">Event</th>
                    <th scope="col">Type</th>
                    <th scope="col">Client id</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((e) => (
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

/** One event: its payload and its deliveries. */
export function EventPage(props: { id: string }) {
  const { api } = useSession()
  const ev = useLoad(() => unwrap(api.GET('/v1/events/{id}', { params: { path: { id: props.id } } })), [props.id])
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
              <table>
                <thead>
                  <tr>
                    <th scope="col">Delivery</th>
                    <th scope="col">Endpoint</th>
                    <th scope="col">Status</th>
                    <th scope="col">Attempts</th>
                  </tr>
                </thead>
                <tbody>
                  {e.deliveries.map((d) => (
                    <tr key={d.id}>
                      <td>
                        <a href={href(`/deliveries/${d.id}`)}>
                          <code>{d.id}</code>
                        </a>
                      </td>
                      <td>{d.endpoint_id ? <a href={href(`/endpoints/${d.endpoint_id}`)}>{d.endpoint_id}</a> : '—'}</td>
                      <td>
                        <Badge value={d.status} />
                      </td>
                      <td>{d.attempt_count}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </Section>
        </>
      )}
    </Loading>
  )
}
