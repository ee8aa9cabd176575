/** One headline figure of `npm run bench`, printed with its target in the closing summary. */
export interface Figure {
  measure: string
  value: string
  target: string
  /** Whether this run met the target; null when the run could not tell. */
  met: boolean | null
}
