import { render } from 'preact'
import { useEffect, useMemo, useState } from 'preact/hooks'
import '../shared/styles.css'
import { ApiError, makeApi, session, unwrap, type Schemas } from '../shared/api'
import { DeliveriesPage, DeliveryPage } from '../shared/deliveries'
import { EndpointPage, EndpointsPage } from '../shared/endpoints'
import { EventPage, EventsPage } from '../shared/events'
import { EventTypesPage } from '../shared/event-types'
import { SessionContext, useRoute } from '../shared/hooks'
import { Layout } from '../shared/layout'
import { Badge } from '../shared/ui'
import { AppsPage } from './apps'
import { KeysPage } from './keys'
import { NotificationPage, NotificationsPage } from './notifications'
import { OverviewPage } from './overview'
import { SignIn } from './sign-in'
import { TemplatesPage } from './templates'
import { UsersPage } from './users'

/** The sessionStorage entry holding the API key (never localStorage, never a URL). */
export const KEY_ENTRY = 'postbox.console.key'

const NAV = [
  { path: '/overview', label: 'Overview' },
  { path: '/apps', label: 'Applications' },
  { path: '/endpoints', label: 'Endpoints' },
  { path: '/events', label: 'Events' },
  { path: '/deliveries', label: 'Deliveries' },
  { path: '/event-types', label: 'Event types' },
  { path: '/notifications', label: 'Notifications' },
  { path: '/users', label: 'Users' },
  { path: '/templates', label: 'Templates' },
  { path: '/keys', label: 'Keys' },
]

type Me = Schemas['KeySelf']

function View() {
  const { parts } = useRoute()
  const [section = 'overview', id] = parts
  switch (section) {
    case 'apps':
      return <AppsPage />
    case 'endpoints':
      return id ? <EndpointPage id={id} /> : <EndpointsPage />
    case 'events':
      return id ? <EventPage id={id} /> : <EventsPage />
    case 'deliveries':
      return id ? <DeliveryPage id={id} /> : <DeliveriesPage />
    case 'event-types':
      return <EventTypesPage />
    case 'notifications':
      return id ? <NotificationPage id={id} /> : <NotificationsPage />
    case 'users':
      return <UsersPage />
    case 'templates':
      return <TemplatesPage />
    case 'keys':
      return <KeysPage />
    default:
      return <OverviewPage />
  }
}

function Console() {
  const [key, setKey] = useState<string | null>(() => session.get(KEY_ENTRY))
  const [me, setMe] = useState<Me | null>(null)
  const [notice, setNotice] = useState<string | null>(null)
  const { parts } = useRoute()
  const signOut = (message: string | null): void => {
    session.clear(KEY_ENTRY)
    setKey(null)
    setMe(null)
    setNotice(message)
  }
  const api = useMemo(() => (key ? makeApi(key, () => signOut('Your key is no longer valid (revoked?). Sign in again.')) : null), [key])
  useEffect(() => {
    // Reloaded with a key in this tab: ask the API who it is.
    if (api && !me) unwrap(api.GET('/v1/keys/self')).then(setMe, (e: unknown) => signOut(e instanceof ApiError ? e.message : String(e)))
  }, [api])
  if (!key || !api) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(k, who) => {
          session.set(KEY_ENTRY, k)
          setNotice(null)
          setKey(k)
          setMe(who)
        }}
      />
    )
  }
  if (!me) return <p class="muted">Signing in…</p>
  const canWrite = me.role === 'admin'
  return (
    <SessionContext.Provider value={{ api, canWrite, mode: 'console' }}>
      <Layout
        brand="Postbox console"
        nav={NAV}
        current={`/${parts[0] ?? 'overview'}`}
        who={
          <>
            <span>
              {me.name} <Badge value={me.role} />
            </span>
            {!canWrite && <span class="muted small">read only</span>}
            <a class="btn btn-plain" href="/docs">API reference</a>
            <button type="button" class="btn btn-plain" onClick={() => signOut('Signed out.')}>
              Sign out
            </button>
          </>
        }
      >
        <View />
      </Layout>
    </SessionContext.Provider>
  )
}

render(<Console />, document.getElementById('app')!)
