import { render } from 'preact'
import { useEffect, useMemo, useState } from 'preact/hooks'
import '../shared/styles.css'
import { ApiError, makeApi, session, unwrap } from '../shared/api'
import { DeliveriesPage, DeliveryPage } from '../shared/deliveries'
import { EndpointPage, EndpointsPage } from '../shared/endpoints'
import { EventPage, EventsPage } from '../shared/events'
import { EventTypesPage } from '../shared/event-types'
import { SessionContext, useRoute } from '../shared/hooks'
import { Layout } from '../shared/layout'
import { Badge, Notice } from '../shared/ui'
import { readClaims, takeToken, TOKEN_ENTRY } from './token'

const NAV = [
  { path: '/endpoints', label: 'Endpoints' },
  { path: '/events', label: 'Events' },
  { path: '/deliveries', label: 'Deliveries' },
  { path: '/event-types', label: 'Event types' },
]

function View() {
  const { parts } = useRoute()
  const [section = 'endpoints', id] = parts
  switch (section) {
    case 'events':
      return id ? <EventPage id={id} /> : <EventsPage />
    case 'deliveries':
      return id ? <DeliveryPage id={id} /> : <DeliveriesPage />
    case 'event-types':
      return <EventTypesPage />
    default:
      return id ? <EndpointPage id={id} /> : <EndpointsPage />
  }
}

/** A full-page message instead of the portal (no token, expired, refused). */
function Stop(props: { title: string; children: string }) {
  return (
    <main class="signin" id="main">
      <h1>{props.title}</h1>
      <Notice kind="error">{props.children}</Notice>
    </main>
  )
}

const EXPIRED = 'This portal link has expired. Ask for a new link.'

function Portal() {
  const [token] = useState(() => takeToken(session))
  const [refused, setRefused] = useState<string | null>(null)
  const { parts } = useRoute()
  const claims = token ? readClaims(token) : null
  const api = useMemo(
    () =>
      token
        ? makeApi(token, () => {
            session.clear(TOKEN_ENTRY)
            const c = readClaims(token)
            setRefused(c && c.expiresAt <= Date.now() ? EXPIRED : 'This portal link is no longer valid: it expired, or its application was deleted. Ask for a new link.')
          })
        : null,
    [token],
  )
  useEffect(() => {
    // One call up front, so an expired or revoked link says so before any view loads.
    if (api) unwrap(api.GET('/v1/endpoints', { params: { query: { limit: 1 } } })).catch((e: unknown) => e instanceof ApiError && e.status === 403 && setRefused(e.message))
  }, [api])
  if (!token || !api) return <Stop title="Webhooks portal">Open this page with the portal link you were given (it ends in #token=…).</Stop>
  if (claims && claims.expiresAt <= Date.now()) return <Stop title="Link expired">{EXPIRED}</Stop>
  if (refused) return <Stop title="Webhooks portal">{refused}</Stop>
  const canWrite = claims ? !claims.readOnly : false
  return (
    <SessionContext.Provider value={{ api, canWrite, mode: 'portal' }}>
      <Layout
        brand="Webhooks"
        nav={NAV}
        current={`/${parts[0] ?? 'endpoints'}`}
        who={
          <>
            {claims && (
              <span data-testid="portal-app" title={`Application id: ${claims.appId}`}>
                {claims.appName ?? <code>{claims.appId}</code>}
              </span>
            )}
            {!canWrite && <Badge value="read only" />}
            {claims && <span class="muted small">link valid until {new Date(claims.expiresAt).toLocaleString()}</span>}
          </>
        }
      >
        <View />
      </Layout>
    </SessionContext.Provider>
  )
}

// A new link opened in the same tab changes only the fragment: start over with its token.
addEventListener('hashchange', () => {
  if (location.hash.startsWith('#token=')) location.reload()
})

render(<Portal />, document.getElementById('app')!)
