/**
 * `pb.consume()`: the consumer loop of a pull endpoint in-process (docs/pull-endpoints.md), the
 * same loop as the typed client's `consume()`, over the pull service instead of HTTP.
 */
import { startConsumer, type ConsumeHandler, type ConsumeOptions, type Consumer, type PulledDelivery } from '../sdk/client/consume-loop.js'
import type { PullService } from './webhooks/pull.js'

export type { ConsumeHandler, ConsumeOptions, Consumer, PulledDelivery }

/** Runs a consumer loop on pull endpoint `endpointId` through `pull` (every application's scope). */
export function consumeInProcess(pull: PullService, endpointId: string, handler: ConsumeHandler, opts: ConsumeOptions = {}): Consumer {
  return startConsumer(
    {
      claim: async (body, signal) => (await pull.claim(endpointId, body, null, signal)).items,
      ack: (items) => pull.ack(endpointId, { items }, null),
      nack: (items) => pull.nack(endpointId, { items }, null),
      release: (items) => pull.release(endpointId, { items }, null),
    },
    handler,
    opts,
  )
}
