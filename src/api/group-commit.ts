import { isStorageUnavailable } from '../errors.js'

/** Coalesces concurrent single writes into one transaction; see `createGroupCommit`. */
export interface GroupCommit<I, O> {
  /** Queues `input`; resolves with its own result once the transaction holding it has committed. */
  submit(input: I): Promise<O>
  /** How many inputs wait for the next flush. */
  readonly queued: number
}

/** Options of `createGroupCommit`. */
export interface GroupCommitOptions<I, O> {
  /** Writes every input in ONE transaction and resolves with the results in input order. */
  runMany(inputs: I[]): Promise<O[]>
  /** Writes one input on its own (used to isolate a failing input of a batch). */
  runOne(input: I): Promise<O>
  /** Upper bound of one transaction; larger queues are split. */
  maxBatch?: number
}

interface Waiter<I, O> {
  input: I
  resolve(value: O): void
  reject(err: unknown): void
}

/**
 * Group commit for ingest. Why: with `synchronous=normal` a commit costs ~20–50 µs of WAL
 * bookkeeping, with `full` an fsync (~1–10 ms); on PostgreSQL a commit is a round trip and a WAL
 * flush. Requests that finish parsing in the same event-loop turn are queued and flushed together
 * from setImmediate, so N concurrent callers pay for one commit while each still answers only
 * after that commit. While a flush's transactions are open, new inputs wait for the next flush,
 * which starts as soon as they end: the slower the commit, the larger the next batch. A single
 * caller waits at most one turn (microseconds) when nothing is in flight, never a timer. If the
 * batch throws (one bad input), every input is retried in its own transaction so one caller's
 * error never becomes another's; a storage failure (disk full) fails them all, because nothing
 * could have been written.
 */
export function createGroupCommit<I, O>(opts: GroupCommitOptions<I, O>): GroupCommit<I, O> {
  const maxBatch = Math.max(1, opts.maxBatch ?? 1000)
  let queue: Waiter<I, O>[] = []
  let scheduled = false
  let flushing = false

  const flush = async (): Promise<void> => {
    scheduled = false
    flushing = true
    try {
      while (queue.length > 0) {
        const all = queue
        queue = []
        const runs: Promise<void>[] = []
        for (let i = 0; i < all.length; i += maxBatch) runs.push(runBatch(all.slice(i, i + maxBatch)))
        await Promise.all(runs)
      }
    } finally {
      flushing = false
    }
  }

  /** Settles every waiter of the batch; never rejects. */
  const runBatch = async (batch: Waiter<I, O>[]): Promise<void> => {
    let results: O[]
    try {
      results = await opts.runMany(batch.map((w) => w.input))
    } catch (err) {
      if (batch.length === 1 || isStorageUnavailable(err)) {
        for (const w of batch) w.reject(err)
        return
      }
      for (const w of batch) {
        try {
          w.resolve(await opts.runOne(w.input))
        } catch (e) {
          w.reject(e)
        }
      }
      return
    }
    batch.forEach((w, i) => w.resolve(results[i]!))
  }

  return {
    submit(input) {
      return new Promise<O>((resolve, reject) => {
        queue.push({ input, resolve, reject })
        // A flush in progress takes this input in its next round.
        if (!scheduled && !flushing) {
          scheduled = true
          setImmediate(() => void flush())
        }
      })
    },
    get queued() {
      return queue.length
    },
  }
}
