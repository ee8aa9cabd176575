import { formatDuration, parseDuration, parseDurationList } from './lib/duration.js'

/**
 * The kinds of setting the configuration table (src/config.ts) is made of. Each kind knows how
 * to read its environment text, how to take a library option, how to check a value from either
 * (and the default), and how to print its default for `--help` and the README.
 */

/** What every setting of the table declares, whatever its kind. */
export interface SettingMeta {
  /** The environment variable, `POSTBOX_…`. */
  env: string
  /** The command-line flag, `--…`. */
  flag: string
  /** One line for `--help` and the README's configuration table. */
  description: string
  /** The default as the docs print it, when the kind's own rendering is not right. */
  docDefault?: string
}

/** One row of the table: a kind with its meta, default and checks. */
export interface Setting<T> extends Required<Pick<SettingMeta, 'env' | 'flag' | 'description' | 'docDefault'>> {
  readonly default: T
  /** Computes the value when nothing sets it (e.g. `<data dir>/postbox.db`), from the settings read so far. */
  readonly derive?: (c: Readonly<Record<string, unknown>>) => T
  /** True for a flag that may stand alone (`--metrics-public`). */
  readonly boolean: boolean
  /** Reads the (trimmed, non-empty) text of the variable or flag; throws a message. */
  parse(text: string): unknown
  /** Takes a library option (`Postbox.open`): durations may be given as text; throws a message. */
  fromOption(value: unknown, name: string): unknown
  /** Checks and normalises a value from anywhere; throws a message naming `option`. */
  check(value: unknown, option: string): T
}

/** A setting's problem, before the loader names the variable (ConfigError). */
export class SettingError extends Error {}

const fail = (message: string): never => {
  throw new SettingError(message)
}

function setting<T>(meta: SettingMeta, def: T, docDefault: string, parts: Partial<Pick<Setting<T>, 'parse' | 'fromOption' | 'derive' | 'boolean'>> & Pick<Setting<T>, 'check'>): Setting<T> {
  return {
    env: meta.env,
    flag: meta.flag,
    description: meta.description,
    docDefault: meta.docDefault ?? docDefault,
    default: def,
    boolean: false,
    parse: (text) => text,
    fromOption: (v) => v,
    ...parts,
  }
}

/** A whole number in [min, max]. */
export function int(meta: SettingMeta & { default: number; min: number; max: number }): Setting<number> {
  const { min, max } = meta
  return setting(meta, meta.default, String(meta.default), {
    parse: (text) => (/^\d+$/.test(text) ? Number(text) : fail(`expected a whole number, got "${text}"`)),
    check: (v, option) =>
      typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max ? v : fail(`must be between ${min} and ${max} (option ${option}), got ${String(v)}`),
  })
}

const DURATION_HINT = 'a duration such as 500ms, 10s, 5m, 6h or 7d'

/** Milliseconds in [min, max], written as a duration (`500ms`, `10s`, `6h`, `7d`). */
export function duration(meta: SettingMeta & { default: number; min: number; max: number }): Setting<number> {
  const { min, max } = meta
  return setting(meta, meta.default, formatDuration(meta.default), {
    parse: (text) => parseDuration(text) ?? fail(`expected ${DURATION_HINT}, got "${text}"`),
    fromOption: (v, name) => (typeof v === 'string' ? (parseDuration(v.trim()) ?? fail(`${name}: expected milliseconds or ${DURATION_HINT}, got "${v}"`)) : v),
    check: (v, option) =>
      typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max
        ? v
        : fail(`must be between ${formatDuration(min)} and ${formatDuration(max)} (${min}-${max} ms, option ${option}), got ${String(v)}`),
  })
}

/** A list of at most 50 delays (a retry schedule), written as a comma list of durations. */
export function durations(meta: SettingMeta & { default: readonly number[] }): Setting<readonly number[]> {
  return setting<readonly number[]>(meta, meta.default, meta.default.map(formatDuration).join(','), {
    parse: (text) => parseDurationList(text) ?? fail(`expected a comma list of durations such as 500ms,2s,1m, got "${text}"`),
    fromOption: (v, name) => {
      if (typeof v !== 'string' && !Array.isArray(v)) return v
      const list = typeof v === 'string' ? parseDurationList(v) : v.map((d: unknown) => (typeof d === 'string' ? parseDuration(d.trim()) : d))
      return list === null || list.includes(null) ? fail(`${name}: expected delays in milliseconds or durations such as 500ms,2s,1m`) : list
    },
    check: (v, option) =>
      Array.isArray(v) && v.length <= 50 && v.every((d) => typeof d === 'number' && Number.isFinite(d) && d >= 0)
        ? v
        : fail(`expected at most 50 delays in milliseconds (option ${option})`),
  })
}

/** true or false (`true`, `1`, `yes`, `on` and their opposites); its flag may stand alone. */
export function bool(meta: SettingMeta & { default: boolean }): Setting<boolean> {
  return setting(meta, meta.default, String(meta.default), {
    boolean: true,
    parse: (text) => (/^(true|1|yes|on)$/i.test(text) ? true : /^(false|0|no|off)$/i.test(text) ? false : fail(`expected true or false, got "${text}"`)),
    check: (v, option) => (typeof v === 'boolean' ? v : fail(`expected true or false (option ${option}), got ${JSON.stringify(v)}`)),
  })
}

/** One of `options`, case-insensitive, stored lower-cased. */
export function choice<const O extends readonly string[]>(meta: SettingMeta & { default: O[number]; options: O; hint?: string }): Setting<O[number]> {
  const hint = meta.hint ?? `${meta.options.slice(0, -1).join(', ')} or ${meta.options.at(-1)!}`
  return setting<O[number]>(meta, meta.default, meta.default, {
    check: (v, option) => {
      const lower = typeof v === 'string' ? v.toLowerCase() : v
      return meta.options.includes(lower as string) ? (lower as O[number]) : fail(`expected ${hint} (option ${option}), got "${String(v)}"`)
    },
  })
}

/** A string; `validate` returns a problem or null. With `default: null` the setting may stay unset. */
export function text<D extends string | null>(
  meta: SettingMeta & {
    default: D
    validate?: (s: string, option: string) => string | null
    /** Rewrites a valid value into its one form (e.g. a URL without its trailing slash). */
    normalize?: (s: string) => string
    derive?: (c: Readonly<Record<string, unknown>>) => string
  },
): Setting<D extends null ? string | null : string> {
  type T = D extends null ? string | null : string
  return setting<T>(meta, meta.default as unknown as T, meta.default ?? '(unset)', {
    ...(meta.derive ? { derive: meta.derive as (c: Readonly<Record<string, unknown>>) => T } : {}),
    check: (v, option) => {
      if (v === null && meta.default === null) return null as T
      if (typeof v !== 'string' || v === '') return fail(`expected ${meta.default === null ? 'a string or nothing' : 'a non-empty string'} (option ${option})`)
      const problem = meta.validate?.(v, option)
      return problem ? fail(problem) : ((meta.normalize ? meta.normalize(v) : v) as T)
    },
  })
}

/** A comma list of strings; `item` checks and normalises one (returns it, or throws a message). */
export function list(meta: SettingMeta & { item?: (s: string) => string; noun: string }): Setting<readonly string[]> {
  return setting<readonly string[]>(meta, [], '(none)', {
    parse: (text) => text.split(',').map((s) => s.trim()).filter((s) => s.length > 0),
    check: (v, option) => {
      if (!Array.isArray(v)) return fail(`expected a list of ${meta.noun} (option ${option})`)
      const items = v.map((s: unknown) => (typeof s === 'string' ? (meta.item ? meta.item(s) : s) : fail(`"${String(s)}" is not one of the ${meta.noun}`)))
      return [...new Set(items)]
    },
  })
}

/** The `SettingError` constructor for item checks of lists. */
export const settingError = fail
