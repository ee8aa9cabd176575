/**
 * The store contract both backends implement (docs/architecture.md): every table family's
 * functions, asynchronous. The SQLite families are written synchronously (better-sqlite3) and
 * lifted by `Async`; the PostgreSQL families implement the lifted interfaces directly.
 */

/** `T` with every function returning a promise of what it returned. */
export type Async<T> = {
  readonly [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : T[K]
}
