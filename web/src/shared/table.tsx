import type { ComponentChildren } from 'preact'
import type { Loaded } from './hooks'
import { Loading, More } from './ui'

/** A column heading; false, null or undefined leaves the column out (`canWrite && 'Actions'`). */
export type Heading = string | false | null | undefined

/** One page of a cursor list of the API (`data` and `next_cursor`). */
export interface CursorPage<T> {
  data: T[]
  next_cursor?: string | null
}

/** A table with a row of column headings; `children` are its body rows. */
export function Table(props: { headings: Heading[]; children: ComponentChildren }) {
  return (
    <table>
      <thead>
        <tr>
          {props.headings.map((h) =>
            h ? (
              <th key={h} scope="col">
                {h}
              </th>
            ) : null,
          )}
        </tr>
      </thead>
      <tbody>{props.children}</tbody>
    </table>
  )
}

/**
 * A loaded page of a cursor list as a table, with "Next page": `row` renders one item's `<tr>`;
 * with `empty`, an empty page shows that sentence instead of the table.
 */
export function PagedTable<T>(props: {
  state: Loaded<CursorPage<T>>
  headings: Heading[]
  row: (item: T) => ComponentChildren
  empty?: ComponentChildren | ((page: CursorPage<T>) => ComponentChildren)
  onMore: (cursor: string) => void
}) {
  const { empty } = props
  return (
    <>
      <Loading state={props.state}>
        {(page) =>
          page.data.length === 0 && empty !== undefined ? (
            <p class="muted">{typeof empty === 'function' ? empty(page) : empty}</p>
          ) : (
            <Table headings={props.headings}>{page.data.map(props.row)}</Table>
          )
        }
      </Loading>
      <More cursor={props.state.data?.next_cursor} onMore={props.onMore} />
    </>
  )
}
