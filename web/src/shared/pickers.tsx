import { useEffect, useState } from 'preact/hooks'
import { unwrap, type Api } from './api'
import { useLoad, useSession } from './hooks'

/** The most options a picker loads (page by page); a longer list still takes the value in the address. */
const PICKER_MAX = 1000

/** A [value, label] pair of a picker. */
type Option = [string, string]

/** Every item of a cursor list, page by page, up to PICKER_MAX. */
async function loadAll<T>(page: (cursor: string | undefined) => Promise<{ data: T[]; next_cursor?: string | null }>): Promise<T[]> {
  const all: T[] = []
  let cursor: string | undefined
  do {
    const p = await page(cursor)
    all.push(...p.data)
    cursor = p.next_cursor ?? undefined
  } while (cursor && all.length < PICKER_MAX)
  return all
}

/** The applications as options: "Name (id)". */
export async function appOptions(api: Api): Promise<Option[]> {
  const apps = await loadAll((cursor) => unwrap(api.GET('/v1/apps', { params: { query: { limit: 200, cursor } } })))
  return apps.map((a) => [a.id, a.name === a.id ? a.id : `${a.name} (${a.id})`])
}

/** The endpoints as options labelled by URL (with the id's end when two share a URL). */
export async function endpointOptions(api: Api): Promise<Option[]> {
  const eps = await loadAll((cursor) => unwrap(api.GET('/v1/endpoints', { params: { query: { limit: 200, cursor } } })))
  const seen = new Map<string, number>()
  for (const e of eps) seen.set(e.url, (seen.get(e.url) ?? 0) + 1)
  return eps.map((e) => [e.id, (seen.get(e.url) ?? 0) > 1 ? `${e.url} (…${e.id.slice(-6)})` : e.url])
}

/** The event types of the catalog (names). */
export async function eventTypeNames(api: Api): Promise<string[]> {
  const types = await loadAll((cursor) => unwrap(api.GET('/v1/event-types', { params: { query: { limit: 200, cursor } } })))
  return types.map((t) => t.name)
}

/**
 * A `<select>` of options loaded from the API, holding its own value (from `value`, again when
 * `value` changes). `first` is the option before them ("any"); a value not among the options
 * (beyond the first PICKER_MAX, or deleted) is kept as its own option. When the options cannot
 * be loaded (a key that may not list them), it is a text input of the raw value instead.
 */
export function Picker(props: {
  id: string
  name?: string
  value: string
  load: (api: Api) => Promise<Option[]>
  first?: Option
  onChange?: (value: string) => void
  describedBy?: string
}) {
  const { api } = useSession()
  const [value, setValue] = useState(props.value)
  useEffect(() => setValue(props.value), [props.value])
  const options = useLoad(() => props.load(api), [])
  const change = (v: string): void => {
    setValue(v)
    props.onChange?.(v)
  }
  if (options.error) {
    return <input id={props.id} name={props.name} value={value} aria-describedby={props.describedBy} onInput={(e) => change((e.target as HTMLInputElement).value)} />
  }
  const list = options.data ?? []
  const all: Option[] = [...(props.first ? [props.first] : []), ...list]
  if (value && !all.some(([v]) => v === value)) all.push([value, value])
  return (
    <select id={props.id} name={props.name} value={value} aria-describedby={props.describedBy} aria-busy={options.loading} onChange={(e) => change((e.target as HTMLSelectElement).value)}>
      {all.map(([v, label]) => (
        <option key={v} value={v}>
          {label}
        </option>
      ))}
    </select>
  )
}

/** A text input suggesting the catalog's event types (any exact type may still be typed). */
export function EventTypeInput(props: { id: string; name?: string; value: string; onInput?: (value: string) => void; describedBy?: string }) {
  const { api } = useSession()
  const names = useLoad(() => eventTypeNames(api).catch(() => [] as string[]), [])
  const [value, setValue] = useState(props.value)
  useEffect(() => setValue(props.value), [props.value])
  return (
    <>
      <input
        id={props.id}
        name={props.name}
        value={value}
        list={`${props.id}-catalog`}
        autoComplete="off"
        aria-describedby={props.describedBy}
        onInput={(e) => {
          const v = (e.target as HTMLInputElement).value
          setValue(v)
          props.onInput?.(v)
        }}
      />
      <datalist id={`${props.id}-catalog`}>
        {(names.data ?? []).map((n) => (
          <option key={n} value={n} />
        ))}
      </datalist>
    </>
  )
}
