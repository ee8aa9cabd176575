import type { ComponentChildren } from 'preact'
import { navigate } from './hooks'

/**
 * An inline filter form whose named fields become the query of a hash route: Apply goes to
 * `path?name=value…` (blank fields left out, `path` alone when all are blank).
 */
export function FilterForm(props: { path: string; names: string[]; onApply?: () => void; children: ComponentChildren }) {
  return (
    <form
      class="inline-form"
      onSubmit={(ev) => {
        ev.preventDefault()
        const form = new FormData(ev.target as HTMLFormElement)
        const q = new URLSearchParams()
        for (const k of props.names) {
          const v = String(form.get(k) ?? '').trim()
          if (v) q.set(k, v)
        }
        props.onApply?.()
        const query = q.toString()
        navigate(query ? `${props.path}?${query}` : props.path)
      }}
    >
      {props.children}
      <button type="submit" class="btn btn-primary">
        Apply
      </button>
    </form>
  )
}
