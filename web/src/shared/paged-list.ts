import { useState } from 'preact/hooks'
import { useLoad, type Loaded } from './hooks'

/** A cursor list being paged: the loaded page, and the cursor setter its "Next page" calls. */
export interface PagedList<P> {
  list: Loaded<P>
  setCursor: (cursor: string | undefined) => void
}

/** Loads `load(cursor)` again whenever `deps` or the cursor change (a new filter should reset the cursor). */
export function usePagedList<P>(load: (cursor: string | undefined) => Promise<P>, deps: unknown[]): PagedList<P> {
  const [cursor, setCursor] = useState<string | undefined>()
  const list = useLoad(() => load(cursor), [...deps, cursor])
  return { list, setCursor }
}
