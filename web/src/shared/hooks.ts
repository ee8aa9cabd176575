import { createContext } from 'preact'
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks'
import type { Api } from './api'

/** What every view needs: the client, and whether this caller may change things. */
export interface Session {
  api: Api
  /** False for viewer keys and read-only portal tokens: no write control is rendered. */
  canWrite: boolean
  mode: 'console' | 'portal'
}

/** The signed-in session of the page. */
export const SessionContext = createContext<Session | null>(null)

/** The session of the page (inside the signed-in layout). */
export function useSession(): Session {
  const s = useContext(SessionContext)
  if (!s) throw new Error('useSession outside a signed-in page')
  return s
}

/** The route after `#/`, split into segments, with its query (`#/deliveries?status=dead`). */
export interface Route {
  parts: string[]
  query: URLSearchParams
}

function readRoute(): Route {
  const hash = location.hash.replace(/^#\/?/, '')
  const [path = '', query = ''] = hash.split('?')
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(query) }
}

/** The current hash route; re-renders on navigation. Hash routes never reach the server. */
export function useRoute(): Route {
  const [route, setRoute] = useState(readRoute)
  useEffect(() => {
    const on = (): void => setRoute(readRoute())
    addEventListener('hashchange', on)
    return () => removeEventListener('hashchange', on)
  }, [])
  return route
}

/** Goes to a hash route such as `/endpoints/ep_1`. */
export function navigate(path: string): void {
  location.hash = '#' + path
}

/** A hash link target. */
export const href = (path: string): string => '#' + path

/** The state of a load: the data, or the error, and a way to load again. */
export interface Loaded<T> {
  data: T | undefined
  error: unknown
  loading: boolean
  reload: () => void
}

/** Runs `fn` when `deps` change (and on `reload`), keeping only the latest answer. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true })
  const [tick, setTick] = useState(0)
  const seq = useRef(0)
  useEffect(() => {
    const mine = ++seq.current
    setState((s) => ({ ...s, loading: true }))
    fn().then(
      (data) => mine === seq.current && setState({ data, loading: false }),
      (error: unknown) => mine === seq.current && setState({ error, loading: false }),
    )
  }, [...deps, tick])
  const reload = useCallback(() => setTick((t) => t + 1), [])
  return { data: state.data, error: state.error, loading: state.loading, reload }
}
