import { readFileSync, readlinkSync } from 'node:fs'
import { processAlive } from '../lib/process.js'

/**
 * When process `pid` started, as the kernel counts it (Linux: /proc/<pid>/stat field 22, clock
 * ticks since boot); null where that cannot be read. The same in every thread and module copy of
 * one process, and different for a later process that reuses the PID.
 */
export function processStart(pid: number): string | null {
  const start = statFields(pid)?.[19]
  return start && /^\d+$/.test(start) ? start : null
}

/**
 * True when process `pid` has exited but was not reaped yet (a zombie: state Z or X in
 * /proc/<pid>/stat), so signal 0 still finds it; false when it runs or cannot be read.
 */
export function processExited(pid: number): boolean {
  const state = statFields(pid)?.[0]
  return state === 'Z' || state === 'X'
}

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces), from field 3 (the state) on; null where unreadable. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  } catch {
    return null
  }
}

/** This process's start: the kernel's, else the wall clock's in seconds (other systems). */
const START = processStart(process.pid) ?? String(Math.round(Date.now() / 1000 - process.uptime()))

/** This process's PID namespace (Linux: the inode of /proc/self/ns/pid); '0' where there is none. */
function pidNamespace(): string {
  try {
    return /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? '0'
  } catch {
    return '0'
  }
}

/** This process's PID namespace, as claim tokens and lock owners name it. */
export const PID_NAMESPACE = pidNamespace()

/**
 * The prefix of every claim token this process writes, `<pid>.<start>.n<PID namespace>.`: a
 * dispatcher starting later can tell whose claims are still in flight, and release at once only
 * those of processes that are gone. The namespace matters because a PID means nothing in another
 * one (two containers on a volume are both PID 1).
 */
export const CLAIM_OWNER = `${process.pid}.${START}.n${PID_NAMESPACE}.`

const OWNER = /^(\d{1,10})\.(\d{1,20})\.(?:n(\d{1,20})\.)?/

/** The PID namespace a claim token or lock owner names (`<pid>.<start>.n<ns>.`), or null when it names none. */
export function ownerNamespace(token: string): string | null {
  return OWNER.exec(token)?.[3] ?? null
}

/** How `isOrphanedClaim` sees processes (injected by tests). */
export interface ProcessView {
  pid: number
  start: string
  /** The PID namespace the view's PIDs belong to. */
  ns: string
  alive(pid: number): boolean
  startOf(pid: number): string | null
}

const THIS_HOST: ProcessView = {
  pid: process.pid,
  start: START,
  ns: PID_NAMESPACE,
  alive: (pid) => processAlive(pid) && !processExited(pid),
  startOf: processStart,
}

/**
 * True when the claim `token` was written by a process of this PID namespace that no longer
 * runs: its PID is not alive, or runs a process that started at another time (this one after a
 * restart with the same PID, or another program that reused it). False when its owner may be
 * alive or cannot be told: a token of another PID namespace (its PIDs mean nothing here), or one
 * written before tokens named their namespace or their owner. Such a row waits for its lease,
 * slower after a crash but never sent twice while it is in flight.
 */
export function isOrphanedClaim(token: string, view: ProcessView = THIS_HOST): boolean {
  const m = OWNER.exec(token)
  if (!m || m[3] !== view.ns) return false
  const pid = Number(m[1])
  if (pid === view.pid) return m[2] !== view.start
  if (!view.alive(pid)) return true
  const start = view.startOf(pid)
  return start !== null && start !== m[2]
}
