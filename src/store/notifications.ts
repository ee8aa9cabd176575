/** A stored notification, mapped to camelCase; `request` is the accepted request as JSON. */
export interface NotificationRow {
  id: string
  appId: string
  topic: string
  tags: string[]
  dedupKey: string | null
  request: string
  recipients: number
  deliveries: number
  createdAt: number
}

/** A notification to insert; app `default` and no tags unless given. */
export type NewNotificationRow = Omit<NotificationRow, 'appId' | 'tags'> & Partial<Pick<NotificationRow, 'appId' | 'tags'>>

/** The operator's filters of GET /v1/notifications; null leaves one out. */
export interface NotificationFilter {
  topic: string | null
  appId: string | null
  /** Notifications with a delivery to, or a suppression of, this recipient. */
  userId: string | null
  since: number | null
  until: number | null
  /** The id of the previous page's last row. */
  after: string | null
  limit: number
}

/** The notifications table: one row per accepted POST /v1/notifications. */
export interface NotificationsStore {
  insert(row: NewNotificationRow): void
  get(id: string): NotificationRow | null
  /** The notification of application `appId` with this dedup_key (unique per application). */
  byDedupKey(appId: string, key: string): NotificationRow | null
  /** Newest first. */
  list(filter: NotificationFilter): NotificationRow[]
}
