import { useState } from 'preact/hooks'
import { ApiError, makeApi, unwrap, type Schemas } from '../shared/api'
import { Field, Notice } from '../shared/ui'

/** What a failed sign-in tells the person, by the API's answer. */
function signInError(e: unknown): string {
  if (e instanceof ApiError && (e.code === 'invalid_token' || e.code === 'unauthorized')) {
    return 'That key was not accepted: it is unknown, revoked or mistyped. Keys start with pbk_; the first admin key is in <data dir>/admin-key.txt.'
  }
  if (e instanceof ApiError && e.status === 0) return 'The Postbox server could not be reached.'
  return e instanceof Error ? e.message : String(e)
}

/** The sign-in form: the key is checked with GET /v1/keys/self, which also tells its role. */
export function SignIn(props: { notice: string | null; onSignedIn: (key: string, me: Schemas['KeySelf']) => void }) {
  const [key, setKey] = useState('')
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const submit = async (ev: Event): Promise<void> => {
    ev.preventDefault()
    setBusy(true)
    setError(null)
    const k = key.trim()
    try {
      const me = await unwrap(makeApi(k).GET('/v1/keys/self'))
      if (me.role === 'publisher') setError('A publisher key can only send events and notifications. Sign in with a viewer or admin key.')
      else props.onSignedIn(k, me)
    } catch (e) {
      setError(signInError(e))
    } finally {
      setBusy(false)
    }
  }
  return (
    <main class="signin" id="main">
      <h1>Postbox console</h1>
      {props.notice && <Notice>{props.notice}</Notice>}
      <form onSubmit={submit} class="form">
        <Field id="api-key" label="API key" hint="Kept in this tab only (sessionStorage), sent only as an Authorization header.">
          <input
            id="api-key"
            type="password"
            autocomplete="off"
            spellcheck={false}
            required
            value={key}
            aria-describedby="api-key-hint"
            onInput={(e) => setKey((e.target as HTMLInputElement).value)}
          />
        </Field>
        {error && <Notice kind="error">{error}</Notice>}
        <button type="submit" class="btn btn-primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  )
}
