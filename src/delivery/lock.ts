/**
 * A lock the dispatcher takes per partition before claiming. One process needs none, so
 * LocalLock always grants; a cluster implementation can replace it without touching the
 * dispatcher.
 */
export interface Lock {
  /** Tries to take `name`; resolves true when this process may claim for it. */
  acquire(name: string): Promise<boolean>
  /** Releases `name`. */
  release(name: string): Promise<void>
}

/** The single-node lock: always granted. */
export class LocalLock implements Lock {
  /** Always grants. */
  async acquire(_name: string): Promise<boolean> {
    return true
  }
  /** Nothing to release. */
  async release(_name: string): Promise<void> {}
}
