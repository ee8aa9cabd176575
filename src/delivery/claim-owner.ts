import { randomBytes } from 'node:crypto'
import { processAlive } from '../lib/process.js'

/** This process start, told apart from an earlier process that had the same PID (a container's PID 1). */
const BOOT = randomBytes(4).toString('hex')

/**
 * The prefix of every claim token this process writes, `<pid>.<boot>.`: a dispatcher starting
 * later can tell whose claims are still in flight, and release at once only those of processes
 * that are gone.
 */
export const CLAIM_OWNER = `${process.pid}.${BOOT}.`

const OWNER = /^(\d{1,10})\.([0-9a-f]{8})\./

/**
 * True when the claim `token` was written by a process that no longer runs: another PID that
 * is not alive, or an earlier process with this PID. False when its owner may be alive, or is
 * unknown (a token without an owner, written before owners were recorded): such a row waits for
 * its lease, which is slower after a crash but never sends a request twice while it is in flight.
 */
export function isOrphanedClaim(token: string, self = { pid: process.pid, boot: BOOT }, alive: (pid: number) => boolean = processAlive): boolean {
  const m = OWNER.exec(token)
  if (!m) return false
  const pid = Number(m[1])
  if (pid === self.pid) return m[2] !== self.boot
  return !alive(pid)
}
