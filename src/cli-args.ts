import { SETTINGS } from './config.js'

/** Flags that belong to one command rather than to the configuration. */
const COMMAND_FLAGS = new Set(['--role', '--name', '--json', '--app', '--method', '--header', '--body', '--json-body', '--delay', '--dedup-key'])
/** Flags that may be given more than once; their values are joined with a newline (no header value holds one). */
const REPEATED_FLAGS = new Set(['--header'])
const BOOLEAN_FLAGS = new Set(['--json', '--help', '-h', ...SETTINGS.filter((s) => s.boolean).map((s) => s.flag)])

/** A parsed command line: the positional words and the command-specific flags. */
export interface ParsedArgs {
  positionals: string[]
  flags: Record<string, string>
  help: boolean
}

/** Splits argv into positionals and flags; configuration flags are left for loadConfig(argv). */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  const positionals: string[] = []
  const flags: Record<string, string> = {}
  let help = false
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--help' || arg === '-h') {
      help = true
      continue
    }
    if (!arg.startsWith('--')) {
      positionals.push(arg)
      continue
    }
    const eq = arg.indexOf('=')
    const name = eq === -1 ? arg : arg.slice(0, eq)
    const known = COMMAND_FLAGS.has(name) || SETTINGS.some((s) => s.flag === name)
    if (!known) throw new UsageError(`unknown option ${name}`)
    let value: string
    if (eq !== -1) value = arg.slice(eq + 1)
    else if (BOOLEAN_FLAGS.has(name) && (argv[i + 1] === undefined || argv[i + 1]!.startsWith('--'))) value = 'true'
    else if (argv[i + 1] === undefined) throw new UsageError(`${name} needs a value`)
    else value = argv[++i]!
    const flag = name.slice(2)
    if (REPEATED_FLAGS.has(name) && flags[flag] !== undefined) flags[flag] += `\n${value}`
    else if (COMMAND_FLAGS.has(name)) flags[flag] = value
  }
  return { positionals, flags, help }
}

/** The positional words each command takes after its name (and `keys` after its subcommand). */
const ARGUMENTS: Record<string, readonly string[]> = {
  serve: [],
  migrate: [],
  backup: ['<file>'],
  'keys create': [],
  'keys list': [],
  'keys revoke': ['<id>'],
  send: ['<type>', '<json>'],
  'send-request': ['<url>'],
  stats: [],
  check: [],
}

/**
 * Throws a UsageError when a known command gets more or fewer positional words than it takes
 * (`postbox stats extra` must not run `stats` as if the word were not there). Unknown commands
 * and subcommands are left to the command itself, which names them.
 */
export function checkArity(positionals: readonly string[]): void {
  const [command = '', sub] = positionals
  const name = command === 'keys' && sub !== undefined ? `keys ${sub}` : command
  const wanted = ARGUMENTS[name]
  if (wanted === undefined) return
  const given = positionals.slice(name.split(' ').length)
  if (given.length === wanted.length) return
  if (given.length > wanted.length) {
    const extra = given.slice(wanted.length).map((w) => JSON.stringify(w)).join(' ')
    throw new UsageError(`${name} ${wanted.length === 0 ? 'takes no arguments' : `takes only ${wanted.join(' ')}`}; unexpected ${extra}`)
  }
  throw new UsageError(`${name} needs ${wanted.join(' ')}`)
}

/** A command-line mistake; the CLI prints it with the usage and exits 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

/** The `postbox --help` text, with every setting from SETTINGS. */
export function usage(): string {
  const width = Math.max(...SETTINGS.map((s) => s.flag.length)) + 2
  const settings = SETTINGS.map((s) => `  ${s.flag.padEnd(width)}${s.env}  (default ${s.default})\n  ${' '.repeat(width)}${s.description}`)
  return [
    'Usage: postbox <command> [options]',
    '',
    'Commands:',
    '  serve                         run the HTTP API and the dispatcher',
    '  migrate                       create or upgrade the database schema',
    '  backup <file>                 online, consistent copy of the database',
    '  keys create --role R [--name N] [--app A]  create an API key (admin, publisher or viewer), scoped to application A; prints it once',
    '  keys list                     list API keys',
    '  keys revoke <id>              revoke an API key',
    '  send <type> <json>            publish one event',
    '  send-request <url> [--method M] [--header "k: v"]... [--body TEXT | --json-body JSON] [--delay 30s] [--dedup-key K] [--app A]',
    '                                make one HTTP request durably (retried until it answers)',
    '  stats                         counts by status, oldest pending, endpoint health',
    '  check                         validate the configuration and the database',
    '',
    'Settings (each flag also reads its environment variable; flags win):',
    ...settings,
    '',
  ].join('\n')
}
