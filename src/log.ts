import { pino, type Logger, type DestinationStream } from 'pino'

/** The logger type used across Postbox. */
export type Log = Logger

/**
 * Creates the JSON-lines logger. Secrets never go through it: the redact list is a second
 * line of defence for fields that might carry one by accident.
 */
export function createLogger(level: string, destination?: DestinationStream): Log {
  return pino(
    {
      level,
      base: { service: 'postbox' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: ['secret', '*.secret', 'key', '*.key', 'authorization', '*.authorization', 'headers.authorization', 'token', '*.token'],
        censor: '[redacted]',
      },
    },
    destination,
  )
}

/** A logger that discards everything; the default for library mode and tests. */
export function silentLogger(): Log {
  return pino({ level: 'silent' })
}
