import { useState } from 'preact/hooks'
import { describeError, unwrap, type Schemas } from './api'
import { AttemptsChart } from './chart'
import { splitList } from './format'
import { href, navigate, useLoad, useRoute, useSession } from './hooks'
import { DeliveryTable } from './deliveries'
import { usePagedList } from './paged-list'
import { appOptions, Picker } from './pickers'
import { PagedTable } from './table'
import { ActionButton, Badge, ErrorNotice, Facts, Field, Loading, Notice, Reveal, Section, TextInput, Time } from './ui'

type Endpoint = Schemas['EndpointOut']

/** enabled, paused (disabled by hand), disabled (by health) or the open circuit. */
export function endpointState(e: Endpoint): string {
  if (e.disabled) return e.disabled_reason && e.disabled_reason !== 'manual' ? 'disabled' : 'paused'
  return e.circuit === 'closed' ? 'enabled' : e.circuit
}

/** "Send test" in a row of the list: sends `postbox.ping` to that endpoint and says which event it was. */
function SendTest(props: { endpoint: Endpoint }) {
  const { api } = useSession()
  const [sent, setSent] = useState<string | null>(null)
  return (
    <>
      <ActionButton
        label="Send test"
        testId={`send-test-${props.endpoint.id}`}
        run={() => unwrap(api.POST('/v1/endpoints/{id}/test', { params: { path: { id: props.endpoint.id } } }))}
        onDone={(r) => setSent((r as { id: string }).id)}
      />
      {sent && (
        <span role="status" class="small">
          {' '}
          Test event <a href={href(`/events/${sent}`)}>{sent}</a> sent.
        </span>
      )}
    </>
  )
}

/** The endpoints list, with the create form for callers who may write. */
export function EndpointsPage() {
  const { api, canWrite, mode } = useSession()
  const appId = useRoute().query.get('app_id') || undefined
  const { list, setCursor } = usePagedList((cursor) => unwrap(api.GET('/v1/endpoints', { params: { query: { limit: 50, cursor, app_id: appId } } })), [appId])
  return (
    <>
      {canWrite && (
        <EndpointForm
          appId={appId}
          onSaved={(e) => navigate(`/endpoints/${e.id}`)}
          onCreated={() => {
            // Back to the first page, read again: the new endpoint is the newest.
            setCursor(undefined)
            list.reload()
          }}
        />
      )}
      <Section title={mode === 'console' && appId ? `Endpoints of ${appId}` : 'Endpoints'}>
        <PagedTable
          state={list}
          onMore={setCursor}
          empty="No endpoints yet."
          headings={['URL', 'State', 'Event types', 'Failures', 'Last success', canWrite && 'Test']}
          row={(e) => (
            <tr key={e.id}>
              <td>
                <a href={href(`/endpoints/${e.id}`)}>{e.url}</a>
                {e.description && <div class="muted small">{e.description}</div>}
              </td>
              <td>
                <Badge value={endpointState(e)} />
              </td>
              <td>{e.event_types === null ? 'all' : e.event_types.join(', ') || 'none'}</td>
              <td>{e.consecutive_failures}</td>
              <td>
                <Time iso={e.last_success_at} />
              </td>
              {canWrite && (
                <td>
                  <SendTest endpoint={e} />
                </td>
              )}
            </tr>
          )}
        />
      </Section>
    </>
  )
}

/** Creates an endpoint, or edits one when `endpoint` is given. */
export function EndpointForm(props: { endpoint?: Endpoint; appId?: string; onSaved: (e: Endpoint) => void; onCreated?: (e: Endpoint) => void; onCancel?: () => void }) {
  const { api, mode } = useSession()
  const e = props.endpoint
  const [app, setApp] = useState(props.appId ?? '')
  const [url, setUrl] = useState(e?.url ?? '')
  const [description, setDescription] = useState(e?.description ?? '')
  const [types, setTypes] = useState(e?.event_types?.join(', ') ?? '')
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const [created, setCreated] = useState<Endpoint | null>(null)
  const prefix = e ? 'edit' : 'new'
  const submit = async (ev: Event): Promise<void> => {
    ev.preventDefault()
    setBusy(true)
    setError(null)
    const body = { url: url.trim(), description, event_types: types.trim() === '' ? null : splitList(types) }
    try {
      const saved = e
        ? await unwrap(api.PATCH('/v1/endpoints/{id}', { params: { path: { id: e.id } }, body }))
        : await unwrap(api.POST('/v1/endpoints', { body: { ...body, ...(mode === 'console' && app.trim() ? { app_id: app.trim() } : {}) } }))
      if (e) props.onSaved(saved)
      else {
        setCreated(saved)
        props.onCreated?.(saved)
      }
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  if (created) {
    return (
      <Section title="Endpoint created">
        <Reveal label="This endpoint's own signing secret (each endpoint has its own; shown once here, then under Show secret):" value={created.secret ?? ''} />
        <div class="actions">
          <button type="button" class="btn btn-primary" onClick={() => props.onSaved(created)}>
            Open the endpoint
          </button>
          <button
            type="button"
            class="btn btn-plain"
            onClick={() => {
              setCreated(null)
              setUrl('')
              setDescription('')
              setTypes('')
            }}
          >
            Add another
          </button>
        </div>
      </Section>
    )
  }
  return (
    <Section title={e ? 'Edit endpoint' : 'Add an endpoint'}>
      <form onSubmit={submit} class="form">
        <Field id={`${prefix}-url`} label="URL" hint="Where Postbox sends the events (https://…)">
          <TextInput id={`${prefix}-url`} type="url" required value={url} onInput={setUrl} placeholder="https://example.com/webhooks" aria-describedby={`${prefix}-url-hint`} />
        </Field>
        {mode === 'console' && !e && (
          <Field id="new-app" label="Application" hint="The application this endpoint belongs to">
            <Picker id="new-app" value={app || 'default'} onChange={setApp} load={appOptions} describedBy="new-app-hint" />
          </Field>
        )}
        <Field id={`${prefix}-description`} label="Description">
          <TextInput id={`${prefix}-description`} value={description} onInput={setDescription} />
        </Field>
        <Field id={`${prefix}-types`} label="Event types" hint="Comma list, e.g. invoice.*, user.created; empty for all">
          <TextInput id={`${prefix}-types`} value={types} onInput={setTypes} aria-describedby={`${prefix}-types-hint`} />
        </Field>
        {error ? <ErrorNotice error={error} /> : null}
        <div class="actions">
          <button type="submit" class="btn btn-primary" disabled={busy}>
            {e ? 'Save' : 'Create endpoint'}
          </button>
          {props.onCancel && (
            <button type="button" class="btn btn-plain" onClick={props.onCancel}>
              Cancel
            </button>
          )}
        </div>
      </form>
    </Section>
  )
}

/** One endpoint: health, 24 h success rate and latency, actions, and its recent deliveries. */
export function EndpointPage(props: { id: string }) {
  const { api, canWrite, mode } = useSession()
  const ep = useLoad(() => unwrap(api.GET('/v1/endpoints/{id}', { params: { path: { id: props.id } } })), [props.id])
  // The portal's token is limited to the endpoint routes: success rate and latency are the console's.
  const series = useLoad(
    () => (mode === 'console' ? unwrap(api.GET('/v1/stats/timeseries', { params: { query: { endpoint_id: props.id, bucket: '1h' } } })) : Promise.resolve(null)),
    [props.id, ep.data],
  )
  const [editing, setEditing] = useState(false)
  const [message, setMessage] = useState<{ kind: 'ok' | 'error'; text: string; secret?: string } | null>(null)
  const [since, setSince] = useState('')
  const path = { params: { path: { id: props.id } } }
  const done = (text: string, secret?: string) => () => {
    setMessage({ kind: 'ok', text, secret })
    ep.reload()
  }
  return (
    <Loading state={ep}>
      {(e) => (
        <>
          <p>
            <a href={href('/endpoints')}>← Endpoints</a>
          </p>
          {editing ? (
            <EndpointForm
              endpoint={e}
              onSaved={() => {
                setEditing(false)
                setMessage({ kind: 'ok', text: 'Saved.' })
                ep.reload()
              }}
              onCancel={() => setEditing(false)}
            />
          ) : (
            <Section
              title={e.url}
              actions={
                canWrite && (
                  <>
                    <button type="button" class="btn btn-plain" onClick={() => setEditing(true)}>
                      Edit
                    </button>
                    {e.disabled ? (
                      <ActionButton label="Enable" kind="primary" run={() => unwrap(api.POST('/v1/endpoints/{id}/enable', path))} onDone={done('Enabled.')} />
                    ) : (
                      <ActionButton
                        label="Pause"
                        run={() => unwrap(api.PATCH('/v1/endpoints/{id}', { ...path, body: { disabled: true } }))}
                        onDone={done('Paused: deliveries wait until you enable it.')}
                      />
                    )}
                    <ActionButton
                      label="Send test"
                      run={() => unwrap(api.POST('/v1/endpoints/{id}/test', path))}
                      onDone={(r) => {
                        setMessage({ kind: 'ok', text: `Test event ${(r as { id: string }).id} sent.` })
                        setTimeout(() => series.reload(), 1500)
                        ep.reload()
                      }}
                    />
                    <ActionButton
                      label="Show secret"
                      run={() => unwrap(api.GET('/v1/endpoints/{id}/secret', path))}
                      onDone={(r) => setMessage({ kind: 'ok', text: 'Current signing secret:', secret: (r as { secret: string }).secret })}
                    />
                    <ActionButton
                      label="Rotate secret"
                      confirm="Rotate the signing secret? The old one keeps being sent during the grace period."
                      run={() => unwrap(api.POST('/v1/endpoints/{id}/secret/rotate', { ...path, body: {} }))}
                      onDone={(r) => setMessage({ kind: 'ok', text: 'New signing secret:', secret: (r as { secret: string }).secret })}
                    />
                    <ActionButton
                      label="Delete"
                      kind="danger"
                      confirm="Delete this endpoint? Its pending deliveries are cancelled."
                      run={() => unwrap(api.DELETE('/v1/endpoints/{id}', path))}
                      onDone={() => navigate('/endpoints')}
                    />
                  </>
                )
              }
            >
              {message && (
                <Notice kind={message.kind}>
                  {message.text} {message.secret && <Reveal label="" value={message.secret} />}
                </Notice>
              )}
              <Facts
                rows={[
                  ['State', <Badge key="s" value={endpointState(e)} />],
                  ['Circuit', <Badge key="c" value={e.circuit} />],
                  ['Failures since last success', e.consecutive_failures],
                  ['Last success', <Time key="t" iso={e.last_success_at} />],
                  ['Failing since', <Time key="f" iso={e.failing_since} />],
                  ['Disabled reason', e.disabled_reason ?? '—'],
                  ['Event types', e.event_types === null ? 'all' : e.event_types.join(', ') || 'none'],
                  ['Description', e.description || '—'],
                  ['Signature', e.signature],
                  ['Timeout', `${e.timeout_ms} ms`],
                  ['Application', <code key="a">{e.app_id}</code>],
                  ['Id', <code key="i">{e.id}</code>],
                ]}
              />
              <Loading state={series}>
                {(s) =>
                  s && (
                  <>
                    <Facts
                      rows={[
                        ['Success rate (24 h)', s.totals.attempts === 0 ? '—' : `${Math.round((s.totals.success / s.totals.attempts) * 1000) / 10}% of ${s.totals.attempts} attempts`],
                        ['Average latency (24 h)', s.totals.avg_duration_ms === null ? '—' : `${s.totals.avg_duration_ms} ms`],
                      ]}
                    />
                    <AttemptsChart series={s} title="Attempts per hour, last 24 h" />
                  </>
                  )
                }
              </Loading>
              {canWrite && (
                <form
                  class="inline-form"
                  onSubmit={(ev) => {
                    ev.preventDefault()
                    void unwrap(api.POST('/v1/endpoints/{id}/recover', { ...path, body: { since: new Date(since).toISOString() } })).then(
                      (r) => setMessage({ kind: 'ok', text: `Recovered: ${r.queued} failed deliveries queued again.` }),
                      (err: unknown) => setMessage({ kind: 'error', text: describeError(err) }),
                    )
                  }}
                >
                  <Field id="recover-since" label="Recover failed deliveries since">
                    <input id="recover-since" type="datetime-local" required value={since} onInput={(ev) => setSince((ev.target as HTMLInputElement).value)} />
                  </Field>
                  <button type="submit" class="btn btn-plain">
                    Recover
                  </button>
                </form>
              )}
            </Section>
          )}
          <Section title="Recent deliveries">
            <DeliveryTable filter={{ endpoint_id: e.id }} key={String(message?.text)} />
          </Section>
        </>
      )}
    </Loading>
  )
}
