/**
 * The store contract both backends implement (docs/architecture.md): every table family's
 * functions, asynchronous. The SQLite families are written synchronously (better-sqlite3) and
 * lifted by `Async`; the PostgreSQL families implement the lifted interfaces directly.
 */

/** `T` with every function returning a promise of what it returned. */
export type Async<T> = {
  readonly [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : T[K]
}

/** Lifts a synchronous table family into its `Async` form: each call's result or throw as a promise. */
export function liftSync<T extends object>(family: T): Async<T> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(family)) {
    out[k] =
      typeof v === 'function'
        ? (...args: unknown[]) => {
            try {
              return Promise.resolve((v as (...a: unknown[]) => unknown).apply(family, args))
            } catch (err) {
              return Promise.reject(err)
            }
          }
        : v
  }
  return out as Async<T>
}
