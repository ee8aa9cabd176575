/** True when a process with `pid` exists (signal 0 tests without sending anything; EPERM means it exists but is not ours). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
