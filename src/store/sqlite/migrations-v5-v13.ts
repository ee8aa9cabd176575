/** SQLite schema steps v4 → v13 (migrations.ts assembles every step; schema.sql is the truth for new files). */

/**
 * The trigger deliveries_next_in_order as schema.sql creates it: declared on `status` at v5, on
 * `completed_at` since v13 (every statement that finishes a row sets it; the claim does not).
 */
const nextInOrderTrigger = (column: 'status' | 'completed_at'): string => `CREATE TRIGGER deliveries_next_in_order AFTER UPDATE OF ${column} ON deliveries
  WHEN NEW.ordering_key IS NOT NULL AND NEW.endpoint_id IS NOT NULL
   AND OLD.status IN ('pending', 'in_flight') AND NEW.status IN ('success', 'dead', 'cancelled')
BEGIN
  UPDATE deliveries SET next_attempt_at = NEW.updated_at
   WHERE rowid = (SELECT o.rowid FROM deliveries o
                   WHERE o.endpoint_id = NEW.endpoint_id AND o.ordering_key = NEW.ordering_key
                     AND o.status IN ('pending', 'in_flight') ORDER BY o.id LIMIT 1)
     AND status = 'pending' AND next_attempt_at = 8640000000000000;
END;`


/** The steps v4 → v13, in order. */
export const STEPS_V5_V13: readonly string[] = [
  /*
   * v4 → v5: claims never read a backlog they cannot take: a per-endpoint due index (a saturated
   * endpoint's rows), and rows of a blocked ordering key set aside until their turn (triggers).
   * Indexes to list dead and cancelled deliveries, events of one type and unread inbox messages;
   * and for the preferences a notification's fan-out looks up by topic, and the subscriptions of
   * a user being deleted.
   */
  `
CREATE INDEX deliveries_dead ON deliveries (id) WHERE status = 'dead';
CREATE INDEX deliveries_dead_endpoint ON deliveries (endpoint_id, id) WHERE status = 'dead';
CREATE INDEX deliveries_cancelled ON deliveries (id) WHERE status = 'cancelled';
CREATE INDEX deliveries_endpoint_due ON deliveries (endpoint_id, next_attempt_at, id) WHERE status = 'pending';
-- Ordered endpoints (docs/delivery.md): a row enqueued behind an older unfinished row of the same endpoint
-- and ordering key waits, its next_attempt_at set to 8640000000000000 (the largest date), instead
-- of being due (store/deliveries.ts enqueue); so a key blocked by a failing or slow row never makes
-- claims read its backlog. When a row of the key finishes, the trigger below makes the oldest
-- unfinished row left due if it was waiting. The claim still checks the barrier itself; this
-- only keeps blocked rows out of its way. (An insert trigger measured +3 µs per enqueue.)
${nextInOrderTrigger('status')}
CREATE TRIGGER endpoints_ordered_changed AFTER UPDATE OF ordered ON endpoints
  WHEN OLD.ordered IS NOT NEW.ordered
BEGIN
  UPDATE deliveries SET next_attempt_at = NEW.updated_at
   WHERE NEW.ordered = 0 AND endpoint_id = NEW.id AND status = 'pending' AND next_attempt_at = 8640000000000000;
  UPDATE deliveries SET next_attempt_at = 8640000000000000
   WHERE NEW.ordered = 1 AND endpoint_id = NEW.id AND status = 'pending' AND attempts = 0 AND ordering_key IS NOT NULL
     AND EXISTS (SELECT 1 FROM deliveries o
                  WHERE o.endpoint_id = deliveries.endpoint_id AND o.ordering_key = deliveries.ordering_key
                    AND o.status IN ('pending', 'in_flight') AND o.id < deliveries.id);
END;
UPDATE deliveries SET next_attempt_at = 8640000000000000
 WHERE status = 'pending' AND attempts = 0 AND ordering_key IS NOT NULL
   AND endpoint_id IN (SELECT id FROM endpoints WHERE ordered = 1)
   AND EXISTS (SELECT 1 FROM deliveries o
                WHERE o.endpoint_id = deliveries.endpoint_id AND o.ordering_key = deliveries.ordering_key
                  AND o.status IN ('pending', 'in_flight') AND o.id < deliveries.id);
CREATE INDEX subscriptions_principal ON subscriptions (principal);
CREATE INDEX preferences_topic ON preferences (topic, user_id);
CREATE INDEX events_type ON events (type, id);
CREATE INDEX inbox_unread ON inbox_messages (user_id, archived) WHERE read = 0;
`,
  /* v5 → v6: directory lists page by sort key instead of by offset (see schema.sql). */
  `
CREATE INDEX subscriptions_created ON subscriptions (created_at DESC, topic, principal);
CREATE INDEX subscriptions_topic_created ON subscriptions (topic, created_at DESC, principal);
CREATE INDEX templates_topic ON templates (topic);
`,
  /* v6 → v7: rows without an endpoint wait in deliveries_endpoint_due under their channel (see schema.sql). */
  `
DROP INDEX deliveries_endpoint_due;
CREATE INDEX deliveries_endpoint_due ON deliveries (coalesce(endpoint_id, '#' || channel), next_attempt_at, id) WHERE status = 'pending';
`,
  /* v7 → v8: the dispatcher lock, one claiming process per file (see schema.sql). */
  `
CREATE TABLE locks (
  name         TEXT PRIMARY KEY,
  owner        TEXT NOT NULL,
  acquired_at  INTEGER NOT NULL,
  seen_at      INTEGER NOT NULL             -- the holder's heartbeat
) WITHOUT ROWID;
`,
  /* v8 → v9: every helper's block of this version (see schema.sql). */
  `
-- ── v9: breaker on a failure rate ──
-- The breaker's window (docs/delivery.md): the latest 20 attempts, newest in bit 0 (1 = failure),
-- and the endpoint's own threshold and pauses (NULL = the global settings).
ALTER TABLE endpoints ADD COLUMN recent_failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN recent_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN breaker_threshold INTEGER;
ALTER TABLE endpoints ADD COLUMN breaker_pause_ms INTEGER;
ALTER TABLE endpoints ADD COLUMN breaker_max_pause_ms INTEGER;

-- ── v9: applications, portal tokens and the event-type catalog ──
-- Applications (tenants, docs/applications.md): every endpoint, event and delivery belongs to one;
-- default always exists, and rows written before v9 belong to it.
CREATE TABLE apps (
  id          TEXT PRIMARY KEY,              -- the client's own id, or app_…
  name        TEXT NOT NULL,
  metadata    TEXT NOT NULL DEFAULT '{}',
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  deleted_at  INTEGER                        -- kept, so a deleted id is never reused for other rows
);
CREATE INDEX apps_created ON apps (created_at DESC, id DESC);
INSERT INTO apps (id, name, created_at, updated_at)
  VALUES ('default', 'Default', CAST(unixepoch('subsec') * 1000 AS INTEGER), CAST(unixepoch('subsec') * 1000 AS INTEGER));
ALTER TABLE endpoints ADD COLUMN app_id TEXT NOT NULL DEFAULT 'default';
ALTER TABLE events ADD COLUMN app_id TEXT NOT NULL DEFAULT 'default';
ALTER TABLE deliveries ADD COLUMN app_id TEXT NOT NULL DEFAULT 'default';
ALTER TABLE api_keys ADD COLUMN app_id TEXT;   -- NULL: the key acts in every application
-- Fan-out reads one application's endpoints, so 10,000 applications cost what one does.
CREATE INDEX endpoints_app ON endpoints (app_id, id) WHERE deleted_at IS NULL;
-- Idempotency is per application: the same client id in two applications is two events.
DROP INDEX events_client_id;
CREATE UNIQUE INDEX events_client_id ON events (app_id, client_id) WHERE client_id IS NOT NULL;
-- ?app_id= lists of events and deliveries. Partial: rows of default (every row of a
-- single-tenant install) cost no index entry; its lists read the table in id order instead.
CREATE INDEX events_app ON events (app_id, id) WHERE app_id <> 'default';
CREATE INDEX deliveries_app ON deliveries (app_id, id) WHERE app_id <> 'default';
-- Portal tokens (ptk_…) are signed and also stored, so deleting their application revokes them.
CREATE TABLE portal_tokens (
  id          TEXT PRIMARY KEY,              -- ptk_…, the id inside the signed token
  app_id      TEXT NOT NULL,
  read_only   INTEGER NOT NULL DEFAULT 0,
  expires_at  INTEGER NOT NULL,
  created_at  INTEGER NOT NULL
);
CREATE INDEX portal_tokens_app ON portal_tokens (app_id, expires_at);
-- The event-type catalog: a JSON Schema (draft 2020-12) per type validates data at ingest.
CREATE TABLE event_types (
  name         TEXT PRIMARY KEY,
  description  TEXT NOT NULL DEFAULT '',
  schema       TEXT,                         -- JSON Schema, or NULL for none
  example      TEXT,                         -- JSON example data, sent by the endpoint test
  deprecated   INTEGER NOT NULL DEFAULT 0,
  archived     INTEGER NOT NULL DEFAULT 0,
  version      INTEGER NOT NULL,             -- moves on every PUT; compiled validators are cached by it
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL
) WITHOUT ROWID;
-- ── v9: console stats ──
CREATE INDEX attempts_started ON attempts (started_at);

-- ── v9: inbox receipts, engagement, counts and snooze ──
-- Notifications carry their application, tags and (see notification_suppressions) every
-- recipient that got nothing, so GET /v1/notifications/:id answers "why didn't X get it?".
ALTER TABLE notifications ADD COLUMN app_id TEXT NOT NULL DEFAULT 'default';
ALTER TABLE notifications ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
CREATE INDEX notifications_app ON notifications (app_id, id);
CREATE INDEX notifications_topic ON notifications (topic, id);
-- A recipient's channel that was decided at accept to deliver nothing (or only inside a digest):
-- reason preference_disabled | no_address | channel_not_configured | digested.
CREATE TABLE notification_suppressions (
  notification_id  TEXT NOT NULL,
  recipient        TEXT NOT NULL,
  channel          TEXT NOT NULL,            -- inbox | email | notify-webhook (the stored channel name)
  reason           TEXT NOT NULL,
  created_at       INTEGER NOT NULL,
  PRIMARY KEY (notification_id, recipient, channel)
) WITHOUT ROWID;
-- Clicks on tracked email links (/c/<signed>), per notification and recipient: the email
-- receipt's clicked_at (the inbox message, when there is one, records its own too).
CREATE TABLE notification_clicks (
  notification_id  TEXT NOT NULL,
  recipient        TEXT NOT NULL,
  clicked_at       INTEGER NOT NULL,
  PRIMARY KEY (notification_id, recipient)
) WITHOUT ROWID;
-- Retention removes a notification with its suppressions and clicks.
CREATE TRIGGER notifications_receipts_delete AFTER DELETE ON notifications
BEGIN
  DELETE FROM notification_suppressions WHERE notification_id = OLD.id;
  DELETE FROM notification_clicks WHERE notification_id = OLD.id;
END;
-- Engagement times (NULL until it happens); the 0/1 flags stay, kept equal to "*_at IS NOT NULL",
-- because the per-user indexes above are built on them.
ALTER TABLE inbox_messages ADD COLUMN app_id TEXT NOT NULL DEFAULT 'default';
ALTER TABLE inbox_messages ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
ALTER TABLE inbox_messages ADD COLUMN body_format TEXT NOT NULL DEFAULT 'text';
ALTER TABLE inbox_messages ADD COLUMN seen_at INTEGER;
ALTER TABLE inbox_messages ADD COLUMN read_at INTEGER;
ALTER TABLE inbox_messages ADD COLUMN clicked_at INTEGER;
ALTER TABLE inbox_messages ADD COLUMN archived_at INTEGER;
ALTER TABLE inbox_messages ADD COLUMN snoozed_until INTEGER;
-- Messages written before v9 have no times: their creation time stands in for them.
UPDATE inbox_messages SET seen_at = CASE WHEN seen = 1 THEN created_at END,
  read_at = CASE WHEN read = 1 THEN created_at END, archived_at = CASE WHEN archived = 1 THEN created_at END;
-- The snooze waker reads the next wake-up from here (one index probe), never every row.
CREATE INDEX inbox_snoozed ON inbox_messages (snoozed_until) WHERE snoozed_until IS NOT NULL;
-- Exact counts of the visible (non-archived, non-snoozed) messages per (user, app, topic, tag),
-- tag '' standing for every message. The triggers below move them in the same statement as the
-- insert, update or delete of a message, so no code path (state change, bulk change, snooze
-- wake-up, retention) can forget them. GET /v1/inbox/counts sums a user's few rows.
CREATE TABLE inbox_counts (
  user_id  TEXT NOT NULL,
  app_id   TEXT NOT NULL,
  topic    TEXT NOT NULL,
  tag      TEXT NOT NULL,
  total    INTEGER NOT NULL DEFAULT 0,
  unread   INTEGER NOT NULL DEFAULT 0,
  unseen   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (user_id, app_id, topic, tag)
) WITHOUT ROWID;
INSERT INTO inbox_counts (user_id, app_id, topic, tag, total, unread, unseen)
  SELECT user_id, app_id, topic, '', count(*), sum(read = 0), sum(seen = 0) FROM inbox_messages
   WHERE archived = 0 AND snoozed_until IS NULL GROUP BY user_id, app_id, topic;
UPDATE inbox_counters SET unread_count = coalesce((SELECT sum(unread) FROM inbox_counts c
   WHERE c.user_id = inbox_counters.user_id AND c.tag = ''), 0);
CREATE TRIGGER inbox_counts_insert AFTER INSERT ON inbox_messages
  WHEN NEW.archived = 0 AND NEW.snoozed_until IS NULL
BEGIN
  INSERT INTO inbox_counts (user_id, app_id, topic, tag, total, unread, unseen)
    SELECT NEW.user_id, NEW.app_id, NEW.topic, t.value, 1, NEW.read = 0, NEW.seen = 0
      FROM (SELECT '' AS value UNION ALL SELECT value FROM json_each(NEW.tags)) t WHERE true
    ON CONFLICT DO UPDATE SET total = total + excluded.total, unread = unread + excluded.unread,
      unseen = unseen + excluded.unseen;
  INSERT INTO inbox_counters (user_id, unread_count, last_seq) SELECT NEW.user_id, 1, 0 WHERE NEW.read = 0
    ON CONFLICT (user_id) DO UPDATE SET unread_count = unread_count + 1;
END;
CREATE TRIGGER inbox_counts_update AFTER UPDATE OF read, seen, archived, snoozed_until ON inbox_messages
  WHEN (OLD.archived = 0 AND OLD.snoozed_until IS NULL) IS NOT (NEW.archived = 0 AND NEW.snoozed_until IS NULL)
    OR OLD.read IS NOT NEW.read OR OLD.seen IS NOT NEW.seen
BEGIN
  INSERT INTO inbox_counts (user_id, app_id, topic, tag, total, unread, unseen)
    SELECT NEW.user_id, NEW.app_id, NEW.topic, t.value, d.total, d.unread, d.unseen
      FROM (SELECT '' AS value UNION ALL SELECT value FROM json_each(NEW.tags)) t,
           (SELECT n - o AS total, n * (NEW.read = 0) - o * (OLD.read = 0) AS unread,
                   n * (NEW.seen = 0) - o * (OLD.seen = 0) AS unseen
              FROM (SELECT (NEW.archived = 0 AND NEW.snoozed_until IS NULL) AS n,
                           (OLD.archived = 0 AND OLD.snoozed_until IS NULL) AS o)) d
     WHERE d.total <> 0 OR d.unread <> 0 OR d.unseen <> 0
    ON CONFLICT DO UPDATE SET total = total + excluded.total, unread = unread + excluded.unread,
      unseen = unseen + excluded.unseen;
  UPDATE inbox_counters SET unread_count = unread_count
      + (NEW.archived = 0 AND NEW.snoozed_until IS NULL AND NEW.read = 0)
      - (OLD.archived = 0 AND OLD.snoozed_until IS NULL AND OLD.read = 0)
   WHERE user_id = NEW.user_id;
END;
CREATE TRIGGER inbox_counts_delete AFTER DELETE ON inbox_messages
  WHEN OLD.archived = 0 AND OLD.snoozed_until IS NULL
BEGIN
  UPDATE inbox_counts SET total = total - 1, unread = unread - (OLD.read = 0), unseen = unseen - (OLD.seen = 0)
   WHERE user_id = OLD.user_id AND app_id = OLD.app_id AND topic = OLD.topic
     AND tag IN (SELECT '' UNION ALL SELECT value FROM json_each(OLD.tags));
  UPDATE inbox_counters SET unread_count = unread_count - (OLD.read = 0) WHERE user_id = OLD.user_id;
END;

-- ── v9: durable HTTP requests ──
ALTER TABLE deliveries ADD COLUMN target_key TEXT;
DROP INDEX deliveries_endpoint_due;
CREATE INDEX deliveries_endpoint_due ON deliveries (coalesce(endpoint_id, target_key, '#' || channel), next_attempt_at, id) WHERE status = 'pending';
CREATE TABLE requests (
  delivery_id     TEXT PRIMARY KEY REFERENCES deliveries (id) ON DELETE CASCADE,
  app_id          TEXT NOT NULL DEFAULT 'default',
  method          TEXT NOT NULL,
  url             TEXT NOT NULL,
  headers         TEXT NOT NULL DEFAULT '{}',
  body            TEXT,
  body_json       INTEGER NOT NULL DEFAULT 0,
  signing_secret  TEXT,
  source          TEXT,
  ref_id          TEXT,
  dedup_key       TEXT,
  timeout_ms      INTEGER NOT NULL,
  retry_schedule  TEXT,
  deliver_at      INTEGER NOT NULL,
  created_at      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX requests_dedup ON requests (app_id, dedup_key) WHERE dedup_key IS NOT NULL;
CREATE INDEX requests_app ON requests (app_id, delivery_id);
CREATE INDEX requests_source ON requests (source, delivery_id) WHERE source IS NOT NULL;
CREATE INDEX requests_ref ON requests (ref_id, delivery_id) WHERE ref_id IS NOT NULL;
`,
  /* v9 → v10: a notification's dedup_key is unique per application (see schema.sql). */
  `
-- ── v10: a notification's dedup_key is unique per application ──
-- Two applications may use the same dedup_key (docs/notifications.md). SQLite cannot drop the
-- column's UNIQUE, so the table is rebuilt with its columns in the same order.
CREATE TABLE notifications_v10 (
  id          TEXT PRIMARY KEY,              -- ntf_…
  topic       TEXT NOT NULL,
  dedup_key   TEXT,
  request     TEXT NOT NULL,                 -- the accepted request as JSON
  recipients  INTEGER NOT NULL,
  deliveries  INTEGER NOT NULL,
  created_at  INTEGER NOT NULL,
  app_id      TEXT NOT NULL DEFAULT 'default',
  tags        TEXT NOT NULL DEFAULT '[]'
);
INSERT INTO notifications_v10 (id, topic, dedup_key, request, recipients, deliveries, created_at, app_id, tags)
  SELECT id, topic, dedup_key, request, recipients, deliveries, created_at, app_id, tags FROM notifications;
DROP TABLE notifications;
ALTER TABLE notifications_v10 RENAME TO notifications;
CREATE UNIQUE INDEX notifications_dedup ON notifications (app_id, dedup_key) WHERE dedup_key IS NOT NULL;
CREATE INDEX notifications_app ON notifications (app_id, id);
CREATE INDEX notifications_topic ON notifications (topic, id);
-- Retention removes a notification with its suppressions and clicks.
CREATE TRIGGER notifications_receipts_delete AFTER DELETE ON notifications
BEGIN
  DELETE FROM notification_suppressions WHERE notification_id = OLD.id;
  DELETE FROM notification_clicks WHERE notification_id = OLD.id;
END;
`,
  /* v10 → v11: events lose their created_at index (see schema.sql). */
  `
-- ── v11: no events_created ──
-- Only retention read events by time; it walks them in rowid order instead (docs/operations.md),
-- so every event insert and delete touches one b-tree fewer.
DROP INDEX events_created;
`,
  /* v11 → v12: a success's attempt is kept in its delivery row (see schema.sql). */
  `
-- ── v12: a success's attempt in its delivery row ──
ALTER TABLE deliveries ADD COLUMN success_started_at INTEGER;
ALTER TABLE deliveries ADD COLUMN success_duration_ms INTEGER;
ALTER TABLE deliveries ADD COLUMN success_body TEXT;
`,
  /* v12 → v13: the ordering trigger fires on completed_at, not status (see schema.sql). */
  `
-- ── v13: the ordering trigger fires on completed_at ──
DROP TRIGGER deliveries_next_in_order;
${nextInOrderTrigger('completed_at')}
`,
]
