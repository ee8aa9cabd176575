import { useState } from 'preact/hooks'
import { unwrap, type Api, type Schemas } from './api'
import { FilterForm } from './filter-form'
import { attemptsText, localToIso } from './format'
import { href, useLoad, useRoute, useSession } from './hooks'
import { usePagedList } from './paged-list'
import { appOptions, endpointOptions, EventTypeInput, Picker } from './pickers'
import { PagedTable } from './table'
import { ActionButton, Badge, Code, Facts, Field, Loading, Notice, Section, Time } from './ui'

type Status = NonNullable<Schemas['DeliveryOut']['status']>
/** The filters of GET /v1/deliveries the views use. */
export interface DeliveryFilter {
  status?: Status
  endpoint_id?: string
  event_type?: string
  event_id?: string
  app_id?: string
  /** Created at or after (ISO 8601). */
  since?: string
  /** Created before (ISO 8601). */
  until?: string
}

const STATUSES: Status[] = ['pending', 'in_flight', 'success', 'dead', 'cancelled']
/** Bulk redeliver stops after this many, so one click cannot queue an unbounded backlog. */
const BULK_MAX = 1000

/** A page of deliveries matching `filter`. */
export function DeliveryTable(props: { filter: DeliveryFilter }) {
  const { api } = useSession()
  const f = props.filter
  const { list, setCursor } = usePagedList(
    (cursor) => unwrap(api.GET('/v1/deliveries', { params: { query: { ...f, limit: 50, cursor } } })),
    [f.status, f.endpoint_id, f.event_type, f.event_id, f.app_id, f.since, f.until],
  )
  return (
    <PagedTable
      state={list}
      onMore={setCursor}
      empty={(page) => `No deliveries${page.next_cursor ? ' on this page' : ''}.`}
      headings={['Delivery', 'Status', 'Event type', 'Attempts', 'Last response', 'Created']}
      row={(d) => (
        <tr key={d.id}>
          <td>
            <a href={href(`/deliveries/${d.id}`)}>
              <code>{d.id}</code>
            </a>
          </td>
          <td>
            <Badge value={d.status} />
          </td>
          <td>{d.event_type}</td>
          <td>{attemptsText(d)}</td>
          <td>{d.last_status_code ?? d.last_error ?? '—'}</td>
          <td>
            <Time iso={d.created_at} />
          </td>
        </tr>
      )}
    />
  )
}

/** Redelivers every dead delivery the filter selects, page by page (at most BULK_MAX). */
async function redeliverAll(api: Api, filter: DeliveryFilter, progress: (n: number) => void): Promise<number> {
  let done = 0
  let cursor: string | undefined
  const seen = new Set<string>()
  do {
    const page = await unwrap(api.GET('/v1/deliveries', { params: { query: { ...filter, status: 'dead', limit: 200, cursor } } }))
    for (const d of page.data) {
      if (seen.has(d.id) || done >= BULK_MAX) continue
      seen.add(d.id)
      await unwrap(api.POST('/v1/deliveries/{id}/redeliver', { params: { path: { id: d.id } } }))
      progress(++done)
    }
    cursor = page.next_cursor ?? undefined
  } while (cursor && done < BULK_MAX)
  return done
}

/** Deliveries with filters in the address (`#/deliveries?status=dead`), and bulk redeliver. */
export function DeliveriesPage() {
  const { api, canWrite, mode } = useSession()
  const { query } = useRoute()
  const filter: DeliveryFilter = {
    status: (STATUSES as string[]).includes(query.get('status') ?? '') ? (query.get('status') as Status) : undefined,
    endpoint_id: query.get('endpoint_id') || undefined,
    event_type: query.get('event_type') || undefined,
    app_id: query.get('app_id') || undefined,
    since: localToIso(query.get('since')),
    until: localToIso(query.get('until')),
  }
  const [progress, setProgress] = useState<string | null>(null)
  return (
    <>
      <Section title="Filter deliveries">
        <FilterForm path="/deliveries" names={['status', 'endpoint_id', 'event_type', 'app_id', 'since', 'until']}>
          <Field id="f-status" label="Status">
            <select id="f-status" name="status" value={filter.status ?? ''}>
              <option value="">any</option>
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </Field>
          <Field id="f-endpoint" label="Endpoint">
            <Picker id="f-endpoint" name="endpoint_id" value={filter.endpoint_id ?? ''} load={endpointOptions} first={['', 'any']} />
          </Field>
          <Field id="f-type" label="Event type">
            <EventTypeInput id="f-type" name="event_type" value={filter.event_type ?? ''} />
          </Field>
          {mode === 'console' && (
            <Field id="f-app" label="Application">
              <Picker id="f-app" name="app_id" value={filter.app_id ?? ''} load={appOptions} first={['', 'any']} />
            </Field>
          )}
          <Field id="f-since" label="Created from">
            <input id="f-since" name="since" type="datetime-local" value={query.get('since') ?? ''} />
          </Field>
          <Field id="f-until" label="Created before">
            <input id="f-until" name="until" type="datetime-local" value={query.get('until') ?? ''} />
          </Field>
        </FilterForm>
        {canWrite && (
          <div class="actions">
            <ActionButton
              label={`Redeliver every dead delivery of this filter (at most ${BULK_MAX})`}
              confirm="Send every dead delivery this filter selects again?"
              run={() => redeliverAll(api, filter, (n) => setProgress(`${n} queued…`))}
              onDone={(n) => setProgress(`${String(n)} dead deliveries queued again.`)}
            />
          </div>
        )}
        {progress && <Notice kind="ok">{progress}</Notice>}
      </Section>
      <Section title="Deliveries">
        <DeliveryTable filter={filter} key={progress ?? ''} />
      </Section>
    </>
  )
}

/** One delivery: its fields, the event's payload and every attempt with its response. */
export function DeliveryPage(props: { id: string }) {
  const { api, canWrite } = useSession()
  const d = useLoad(() => unwrap(api.GET('/v1/deliveries/{id}', { params: { path: { id: props.id } } })), [props.id])
  const event = useLoad(
    () => (d.data?.event_id ? unwrap(api.GET('/v1/events/{id}', { params: { path: { id: d.data.event_id } } })) : Promise.resolve(null)),
    [d.data?.event_id],
  )
  const [note, setNote] = useState<string | null>(null)
  return (
    <Loading state={d}>
      {(dl) => (
        <>
          <p>
            <a href={href('/deliveries')}>← Deliveries</a>
          </p>
          <Section
            title={`Delivery ${dl.id}`}
            actions={
              canWrite &&
              ['success', 'dead', 'cancelled'].includes(dl.status) && (
                <ActionButton
                  label="Redeliver"
                  kind="primary"
                  run={() => unwrap(api.POST('/v1/deliveries/{id}/redeliver', { params: { path: { id: dl.id } } }))}
                  onDone={() => {
                    setNote('Queued again.')
                    d.reload()
                  }}
                />
              )
            }
          >
            {note && <Notice kind="ok">{note}</Notice>}
            <Facts
              rows={[
                ['Status', <Badge key="s" value={dl.status} />],
                ['Event type', dl.event_type],
                ['Event', dl.event_id ? <a href={href(`/events/${dl.event_id}`)}>{dl.event_id}</a> : '—'],
                ['Endpoint', dl.endpoint_id ? <a href={href(`/endpoints/${dl.endpoint_id}`)}>{dl.endpoint_id}</a> : '—'],
                ['Attempts', attemptsText(dl)],
                ['Next attempt', <Time key="n" iso={dl.next_attempt_at} />],
                ['Created', <Time key="c" iso={dl.created_at} />],
                ['Completed', <Time key="d" iso={dl.completed_at} />],
              ]}
            />
          </Section>
          <Section title="Attempts">
            {(dl.attempts ?? []).length === 0 ? (
              <p class="muted">No attempt yet.</p>
            ) : (
              <ol class="attempts">
                {(dl.attempts ?? []).map((a) => (
                  <li key={a.attempt} class="attempt" data-testid="attempt">
                    <div class="attempt-head">
                      <strong>Attempt {a.attempt}</strong> <Badge value={a.outcome} /> <span>{a.status_code === null ? 'no response' : `HTTP ${a.status_code}`}</span>{' '}
                      <span class="muted">
                        {a.duration_ms} ms, <Time iso={a.started_at} />
                      </span>
                    </div>
                    {a.error && <p class="error-text">{a.error}</p>}
                    <Code value={a.response_body} label={`Response body of attempt ${a.attempt}`} />
                  </li>
                ))}
              </ol>
            )}
          </Section>
          <Section title="Payload">
            <Loading state={event}>{(ev) => (ev ? <Code value={ev.data} label="Event payload" /> : <p class="muted">No event payload (a notification delivery).</p>)}</Loading>
          </Section>
        </>
      )}
    </Loading>
  )
}
