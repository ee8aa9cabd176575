/** Why a recipient's channel delivered nothing (or only inside a digest), decided at accept. */
export type SuppressionReason = 'preference_disabled' | 'no_address' | 'channel_not_configured' | 'digested'

/** One suppression to record. */
export interface Suppression {
  recipient: string
  channel: string
  reason: SuppressionReason
}

/** One (recipient, channel) of a notification as the operator's view shows it. */
export interface ReceiptRow {
  recipient: string
  channel: string
  deliveryId: string | null
  /** The delivery's status, or 'suppressed' when only a suppression exists. */
  status: string
  lastError: string | null
  completedAt: number | null
  reason: SuppressionReason | null
  seenAt: number | null
  readAt: number | null
  clickedAt: number | null
  archivedAt: number | null
}

/** Suppressions and clicks: what the operator's view adds to a notification's deliveries. */
export interface ReceiptsStore {
  /** Records the suppressions decided while accepting notification `id` (inside its transaction). */
  suppress(id: string, rows: readonly Suppression[], now: number): void
  /** Up to `limit` receipts of a notification. */
  receipts(id: string, limit: number): ReceiptRow[]
  /** How many suppressions a notification has. */
  suppressedCount(id: string): number
  /** True when the notification has a delivery to `recipient` on `channel`. */
  hasDelivery(notificationId: string, recipient: string, channel: string): boolean
  /** Records the first click of a recipient on a notification's tracked email link. */
  click(notificationId: string, recipient: string, now: number): void
}
