import type { ComponentChildren, JSX } from 'preact'
import { useState } from 'preact/hooks'
import { describeError } from './api'
import { ago, pretty, when } from './format'
import type { Loaded } from './hooks'

/** A page section with its heading. */
export function Section(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  return (
    <section class="card">
      <header class="card-head">
        <h2>{props.title}</h2>
        {props.actions && <div class="actions">{props.actions}</div>}
      </header>
      {props.children}
    </section>
  )
}

/** An error (role=alert, read out at once) or a notice (role=status). */
export function Notice(props: { kind?: 'error' | 'ok' | 'info'; children: ComponentChildren }) {
  const kind = props.kind ?? 'info'
  return (
    <div class={`notice notice-${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {props.children}
    </div>
  )
}

/** The error of a failed call, as a sentence. */
export function ErrorNotice(props: { error: unknown }) {
  if (!props.error) return null
  return <Notice kind="error">{describeError(props.error)}</Notice>
}

/** Shows a load's error, a spinner, or its data through `children`. */
export function Loading<T>(props: { state: Loaded<T>; children: (data: T) => ComponentChildren }) {
  if (props.state.error) return <ErrorNotice error={props.state.error} />
  if (props.state.data === undefined) return <p class="muted" aria-busy="true">Loading…</p>
  return <>{props.children(props.state.data)}</>
}

/** A button whose click runs an async action: disabled while it runs, its error shown beside it. */
export function ActionButton(props: {
  label: string
  run: () => Promise<unknown>
  kind?: 'primary' | 'danger' | 'plain'
  confirm?: string
  onDone?: (result: unknown) => void
  testId?: string
}) {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(null)
  const click = async (): Promise<void> => {
    if (props.confirm && !window.confirm(props.confirm)) return
    setBusy(true)
    setError(null)
    try {
      const result = await props.run()
      props.onDone?.(result)
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }
  return (
    <span class="action">
      <button type="button" class={`btn btn-${props.kind ?? 'plain'}`} disabled={busy} onClick={click} data-testid={props.testId}>
        {busy ? `${props.label}…` : props.label}
      </button>
      {error ? <ErrorNotice error={error} /> : null}
    </span>
  )
}

/** A labelled form control. */
export function Field(props: { label: string; hint?: string; children: ComponentChildren; id: string }) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      {props.children}
      {props.hint && (
        <small class="muted" id={`${props.id}-hint`}>
          {props.hint}
        </small>
      )}
    </div>
  )
}

/** A text input bound to a state value. */
export function TextInput(props: { id: string; value: string; onInput: (v: string) => void } & Omit<JSX.InputHTMLAttributes<HTMLInputElement>, 'value' | 'onInput'>) {
  const { onInput, ...rest } = props
  return <input {...rest} value={props.value} onInput={(e) => onInput((e.target as HTMLInputElement).value)} />
}

/** A textarea bound to a state value. */
export function TextArea(props: { id: string; value: string; onInput: (v: string) => void } & Omit<JSX.TextareaHTMLAttributes<HTMLTextAreaElement>, 'value' | 'onInput'>) {
  const { onInput, ...rest } = props
  return <textarea {...rest} value={props.value} onInput={(e) => onInput((e.target as HTMLTextAreaElement).value)} />
}

/** A select bound to a state value: `options` are [value, label] pairs. */
export function SelectInput<T extends string>(props: { id: string; value: T; onChange: (v: T) => void; options: [T, string][] }) {
  return (
    <select id={props.id} value={props.value} onChange={(e) => props.onChange((e.target as HTMLSelectElement).value as T)}>
      {props.options.map(([value, label]) => (
        <option key={value} value={value}>
          {label}
        </option>
      ))}
    </select>
  )
}

const STATUS_KIND: Record<string, string> = {
  success: 'ok',
  delivered: 'ok',
  closed: 'ok',
  enabled: 'ok',
  pending: 'info',
  in_flight: 'info',
  half_open: 'warn',
  retry: 'warn',
  snooze: 'warn',
  suppressed: 'warn',
  paused: 'warn',
  dead: 'bad',
  open: 'bad',
  disabled: 'bad',
  cancelled: 'muted',
}

/** A status word as a coloured badge (the word itself carries the meaning, not the colour). */
export function Badge(props: { value: string | null | undefined }) {
  const v = props.value ?? '—'
  return <span class={`badge badge-${STATUS_KIND[v] ?? 'muted'}`}>{v.replace('_', ' ')}</span>
}

/** A relative time with the exact one on hover. */
export function Time(props: { iso: string | null | undefined }) {
  if (!props.iso) return <span class="muted">—</span>
  return (
    <time dateTime={props.iso} title={when(props.iso)}>
      {ago(props.iso)}
    </time>
  )
}

/** A JSON value or body, pretty-printed in a scrollable block. */
export function Code(props: { value: unknown; label: string }) {
  return (
    <pre class="code" tabIndex={0} aria-label={props.label}>
      {props.value === null || props.value === undefined ? '(empty)' : pretty(props.value)}
    </pre>
  )
}

/** A secret or link shown once, with a copy button. */
export function Reveal(props: { label: string; value: string }) {
  const [copied, setCopied] = useState(false)
  return (
    <div class="reveal" role="status">
      <span>{props.label}</span>
      <code data-testid="revealed">{props.value}</code>
      <button
        type="button"
        class="btn btn-plain"
        onClick={() => {
          void navigator.clipboard?.writeText(props.value).then(() => setCopied(true), () => setCopied(false))
        }}
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  )
}

/** Key-value rows of an object's fields. */
export function Facts(props: { rows: [string, ComponentChildren][] }) {
  return (
    <dl class="facts">
      {props.rows.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  )
}

/** "Next page" for a cursor list. */
export function More(props: { cursor: string | null | undefined; onMore: (cursor: string) => void }) {
  if (!props.cursor) return null
  return (
    <button type="button" class="btn btn-plain" onClick={() => props.onMore(props.cursor!)}>
      Next page
    </button>
  )
}
