/** What a PostgreSQL table family runs its SQL on: the pool, or the client of one transaction. */
export interface PgQueryable {
  query<R = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<{ rows: R[]; rowCount: number | null }>
}
