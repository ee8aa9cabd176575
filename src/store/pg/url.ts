/** The URL with its password left out: what `Store.path`, logs and errors show. Imports nothing, so callers need not load `pg`. */
export function redactPgUrl(url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = ''
    return u.toString().replace(/:@/, '@')
  } catch {
    return 'postgres://(unparsable URL)'
  }
}
