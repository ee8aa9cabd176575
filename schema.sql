-- Postbox schema: the whole current schema, the source of truth.
-- Times are epoch milliseconds. Ids are prefixed, random and time-sortable (src/lib/ids.ts).
-- The last statement sets PRAGMA user_version; src/store/migrations.ts upgrades older files.

-- ───────────────────────── events ─────────────────────────
CREATE TABLE events (
  id            TEXT PRIMARY KEY,            -- evt_…
  client_id     TEXT,                        -- the client's id or Idempotency-Key, for dedup
  type          TEXT NOT NULL,
  ordering_key  TEXT,
  body          TEXT NOT NULL,               -- the envelope, serialised once, sent byte for byte
  created_at    INTEGER NOT NULL
);
-- Partial: most events carry no client id, and a NULL would still cost an index entry.
CREATE UNIQUE INDEX events_client_id ON events (client_id) WHERE client_id IS NOT NULL;
-- `GET /v1/events?type=` newest first; without it a rare type meant walking every newer event.
CREATE INDEX events_type ON events (type, id);

-- ───────────────────────── endpoints ─────────────────────────
CREATE TABLE endpoints (
  id                    TEXT PRIMARY KEY,    -- ep_…
  url                   TEXT NOT NULL,
  description           TEXT NOT NULL DEFAULT '',
  event_types           TEXT,                -- JSON array of patterns; NULL = every type
  headers               TEXT NOT NULL DEFAULT '{}',
  method                TEXT NOT NULL DEFAULT 'POST',
  timeout_ms            INTEGER NOT NULL DEFAULT 15000,
  max_concurrency       INTEGER NOT NULL DEFAULT 16,
  rate_limit            REAL,                -- requests per second; NULL = unlimited
  ordered               INTEGER NOT NULL DEFAULT 0,
  retry_schedule        TEXT,                -- JSON array of ms; NULL = the global schedule
  signature             TEXT NOT NULL DEFAULT 'standard',
  secret                TEXT NOT NULL,
  previous_secrets      TEXT NOT NULL DEFAULT '[]', -- JSON [{secret, expires_at}] still in grace
  metadata              TEXT NOT NULL DEFAULT '{}',
  disabled              INTEGER NOT NULL DEFAULT 0,
  disabled_reason       TEXT,
  deleted_at            INTEGER,             -- soft delete: deliveries keep their endpoint
  last_success_at       INTEGER,
  last_failure_at       INTEGER,
  failing_since         INTEGER,             -- first failure since the last success (auto-disable window)
  consecutive_failures  INTEGER NOT NULL DEFAULT 0,
  failures_since_success INTEGER NOT NULL DEFAULT 0,
  paused_until          INTEGER,             -- circuit breaker: no claims before this time
  pause_count           INTEGER NOT NULL DEFAULT 0,
  created_at            INTEGER NOT NULL,
  updated_at            INTEGER NOT NULL
);

-- ───────────────────────── deliveries (the queue) ─────────────────────────
-- One table for every channel: webhook rows carry event_id + endpoint_id, notification rows
-- carry notification_id + recipient. The claim protocol is the same for all of them.
-- At most one delivery per (event, endpoint) and per (notification, recipient, channel): the two
-- unique indexes below, which also serve the lookups by event and by notification. (Up to v3 a
-- dedup_key column had its own unique index: one more b-tree per insert, ~20% of an enqueue.)
CREATE TABLE deliveries (
  id               TEXT PRIMARY KEY,         -- dlv_…
  channel          TEXT NOT NULL,            -- webhook | inbox | email
  event_id         TEXT REFERENCES events (id),
  endpoint_id      TEXT REFERENCES endpoints (id),
  notification_id  TEXT,
  recipient        TEXT,
  event_type       TEXT NOT NULL,            -- event type, or the notification topic
  ordering_key     TEXT,
  payload          TEXT,                     -- channel-specific JSON (rendered notification)
  group_key        TEXT,                     -- digest group: recipient|channel|window
  status           TEXT NOT NULL DEFAULT 'pending',
  attempts         INTEGER NOT NULL DEFAULT 0,
  max_attempts     INTEGER NOT NULL,
  next_attempt_at  INTEGER NOT NULL,
  claim_token      TEXT,
  lease_until      INTEGER,
  last_status_code INTEGER,
  last_error       TEXT,
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL,
  completed_at     INTEGER
);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX deliveries_leases ON deliveries (lease_until) WHERE status = 'in_flight';
CREATE INDEX deliveries_order_barrier ON deliveries (endpoint_id, ordering_key, id)
  WHERE status IN ('pending', 'in_flight') AND ordering_key IS NOT NULL;
CREATE UNIQUE INDEX deliveries_event ON deliveries (event_id, endpoint_id) WHERE event_id IS NOT NULL;
-- No status column here: claim and settle change status, and every index on it costs a delete + insert.
CREATE INDEX deliveries_endpoint ON deliveries (endpoint_id, id) WHERE endpoint_id IS NOT NULL;
CREATE UNIQUE INDEX deliveries_notification ON deliveries (notification_id, recipient, channel)
  WHERE notification_id IS NOT NULL;
-- Retention walks this. Claims never touch it; the earlier (status, completed_at) WHERE status IN
-- (…) form cost ~25% of claim+settle throughput (bench/store.ts).
CREATE INDEX deliveries_finished ON deliveries (completed_at) WHERE completed_at IS NOT NULL;
CREATE INDEX deliveries_group ON deliveries (group_key) WHERE group_key IS NOT NULL;
-- Lists of dead or cancelled deliveries (the operator's "what failed?"), newest first. Rows
-- enter these only when they end that way, so the queue's hot path never touches them.
CREATE INDEX deliveries_dead ON deliveries (id) WHERE status = 'dead';
-- One endpoint's dead rows: its dead list, and recover (which walked the endpoint's history).
CREATE INDEX deliveries_dead_endpoint ON deliveries (endpoint_id, id) WHERE status = 'dead';
CREATE INDEX deliveries_cancelled ON deliveries (id) WHERE status = 'cancelled';
-- The claim's second path: when the due rows at the head of the queue all belong to saturated or
-- paused endpoints (or blocked ordering keys), it takes each other endpoint's due rows from here instead of reading past them.
-- v7: keyed by endpoint, or by `#<channel>` for rows without one (DUE_KEY in store/delivery-claim.ts),
-- so inbox, email and notify-webhook rows take their turns apart and a slow mail server holds
-- back email only.
-- (deliveries_endpoint_due itself is created in the v9 block below: since v9 its key also holds target_key.)
-- Ordered endpoints (docs/delivery.md): a row enqueued behind an older unfinished row of the same endpoint
-- and ordering key waits, its next_attempt_at set to 8640000000000000 (the largest date), instead
-- of being due (store/deliveries.ts enqueue); so a key blocked by a failing or slow row never makes
-- claims read its backlog. When a row of the key finishes, the trigger below makes the oldest
-- unfinished row left due if it was waiting. The claim still checks the barrier itself; this
-- only keeps blocked rows out of its way. (An insert trigger measured +3 µs per enqueue.)
-- Declared on completed_at since v13 (on status before; see the v13 block below).
CREATE TRIGGER deliveries_next_in_order AFTER UPDATE OF completed_at ON deliveries
  WHEN NEW.ordering_key IS NOT NULL AND NEW.endpoint_id IS NOT NULL
   AND OLD.status IN ('pending', 'in_flight') AND NEW.status IN ('success', 'dead', 'cancelled')
BEGIN
  UPDATE deliveries SET next_attempt_at = NEW.updated_at
   WHERE rowid = (SELECT o.rowid FROM deliveries o
                   WHERE o.endpoint_id = NEW.endpoint_id AND o.ordering_key = NEW.ordering_key
                     AND o.status IN ('pending', 'in_flight') ORDER BY o.id LIMIT 1)
     AND status = 'pending' AND next_attempt_at = 8640000000000000;
END;
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

CREATE TABLE attempts (
  id             INTEGER PRIMARY KEY,
  delivery_id    TEXT NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
  attempt        INTEGER NOT NULL,           -- 1-based
  started_at     INTEGER NOT NULL,
  duration_ms    INTEGER NOT NULL,
  outcome        TEXT NOT NULL,              -- success | retry | dead | snooze
  status_code    INTEGER,
  error          TEXT,
  response_body  TEXT                        -- truncated to 16 KiB
);
CREATE INDEX attempts_delivery ON attempts (delivery_id, id);
-- ── v9: console stats ──
-- The console's deliveries-per-minute chart reads the attempt log by time (GET /v1/stats/timeseries).
CREATE INDEX attempts_started ON attempts (started_at);

-- ───────────────────────── API keys ─────────────────────────
CREATE TABLE api_keys (
  id            TEXT PRIMARY KEY,            -- key_…
  name          TEXT NOT NULL,
  role          TEXT NOT NULL,               -- admin | publisher | viewer
  hash          TEXT NOT NULL UNIQUE,        -- hex SHA-256 of the key; the key itself is never stored
  prefix        TEXT NOT NULL,               -- first characters, to recognise a key in lists
  created_at    INTEGER NOT NULL,
  last_used_at  INTEGER,
  revoked_at    INTEGER
);

-- ───────────────────────── directory ─────────────────────────
CREATE TABLE users (
  id          TEXT PRIMARY KEY,
  email       TEXT,
  name        TEXT,
  locale      TEXT,
  timezone    TEXT,
  roles       TEXT NOT NULL DEFAULT '[]',
  teams       TEXT NOT NULL DEFAULT '[]',
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
);
CREATE INDEX users_email ON users (email COLLATE NOCASE);

CREATE TABLE user_groups (
  kind     TEXT NOT NULL,                    -- role | team
  name     TEXT NOT NULL,
  user_id  TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  PRIMARY KEY (kind, name, user_id)
) WITHOUT ROWID;
CREATE INDEX user_groups_user ON user_groups (user_id);

CREATE TABLE subscriptions (
  topic       TEXT NOT NULL,
  principal   TEXT NOT NULL,                 -- user:<id> | role:<r> | team:<t>
  enabled     INTEGER NOT NULL DEFAULT 1,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (topic, principal)
) WITHOUT ROWID;
-- Deleting a user removes their subscriptions.
CREATE INDEX subscriptions_principal ON subscriptions (principal);
-- v6: lists read a page by its sort key, newest first with ties in key order (store/directory.ts):
-- the whole list, and one topic's.
CREATE INDEX subscriptions_created ON subscriptions (created_at DESC, topic, principal);
CREATE INDEX subscriptions_topic_created ON subscriptions (topic, created_at DESC, principal);

CREATE TABLE preferences (
  user_id      TEXT NOT NULL,                -- a user id or *
  topic        TEXT NOT NULL,                -- a topic or *
  channel      TEXT NOT NULL,                -- inbox | email | webhook | *
  enabled      INTEGER NOT NULL DEFAULT 1,
  digest       TEXT NOT NULL DEFAULT 'none', -- none | daily | weekly
  quiet_hours  TEXT,                         -- JSON {tz, start, end} or NULL
  updated_at   INTEGER NOT NULL,
  PRIMARY KEY (user_id, topic, channel)
) WITHOUT ROWID;
-- A notification's fan-out asks which users have their own preferences for its topic.
CREATE INDEX preferences_topic ON preferences (topic, user_id);

CREATE TABLE templates (
  id          INTEGER PRIMARY KEY,
  topic       TEXT NOT NULL,
  channel     TEXT NOT NULL,
  locale      TEXT NOT NULL,
  version     INTEGER NOT NULL,
  subject     TEXT NOT NULL DEFAULT '',
  body        TEXT NOT NULL DEFAULT '',
  format      TEXT NOT NULL DEFAULT 'text',  -- text | markdown | html
  active      INTEGER NOT NULL DEFAULT 1,
  created_at  INTEGER NOT NULL,
  UNIQUE (topic, channel, locale, version)
);
-- v6: one topic's templates, newest first by id (the rowid, which every index entry ends with).
CREATE INDEX templates_topic ON templates (topic);

-- ───────────────────────── notifications and inbox ─────────────────────────
CREATE TABLE notifications (
  id          TEXT PRIMARY KEY,              -- ntf_…
  topic       TEXT NOT NULL,
  dedup_key   TEXT UNIQUE,
  request     TEXT NOT NULL,                 -- the accepted request as JSON
  recipients  INTEGER NOT NULL,
  deliveries  INTEGER NOT NULL,
  created_at  INTEGER NOT NULL
);

CREATE TABLE inbox_messages (
  id               TEXT PRIMARY KEY,         -- msg_…
  user_id          TEXT NOT NULL,
  notification_id  TEXT,
  delivery_id      TEXT UNIQUE,              -- makes a re-sent inbox delivery idempotent
  topic            TEXT NOT NULL,
  title            TEXT NOT NULL,
  body             TEXT NOT NULL DEFAULT '',
  severity         TEXT NOT NULL DEFAULT 'info',
  action_url       TEXT,
  payload          TEXT,
  seen             INTEGER NOT NULL DEFAULT 0,
  read             INTEGER NOT NULL DEFAULT 0,
  archived         INTEGER NOT NULL DEFAULT 0,
  created_at       INTEGER NOT NULL,
  -- v3: a message carries its own two stream events instead of two inbox_stream rows:
  -- `notification` with id seq, then `unread_count` (unread_after) with id seq + 1.
  -- NULL on messages written before v3, whose events are in inbox_stream.
  seq              INTEGER,
  unread_after     INTEGER
);
CREATE INDEX inbox_created ON inbox_messages (created_at);
-- v3: lists go newest first by rowid (arrival order, which is also seq order within a user), so
-- this one per-user index serves both lists and replay. Every message of a fan-out lands on a
-- different user's pages, so each per-user index costs about one page write per recipient;
-- the v2 form (user_id, archived, id) was three times larger and needed a second one for seq.
CREATE INDEX inbox_user ON inbox_messages (user_id, archived);
-- The unread list and mark-all-read: without it both walked the user's whole history (~0.7 µs a
-- message). It costs a fan-out one more index entry per recipient (~10-20% of an inbox batch).
CREATE INDEX inbox_unread ON inbox_messages (user_id, archived) WHERE read = 0;

-- unread_count per user, maintained in the same transaction as every state change.
CREATE TABLE inbox_counters (
  user_id       TEXT PRIMARY KEY,
  unread_count  INTEGER NOT NULL DEFAULT 0,
  last_seq      INTEGER NOT NULL DEFAULT 0   -- the stream's per-user event id
);

-- The live stream's durable log: the last 1,000 events per user, for Last-Event-ID replay.
-- Since v3 it holds state and unread_count events of state changes; message events are on
-- inbox_messages (seq), so a fan-out appends nothing here.
CREATE TABLE inbox_stream (
  user_id     TEXT NOT NULL,
  seq         INTEGER NOT NULL,
  kind        TEXT NOT NULL,                 -- notification | state | unread_count
  data        TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (user_id, seq)
) WITHOUT ROWID;

-- ───────────────────────── locks ─────────────────────────
-- v8: who may claim deliveries from this file, as a lease (src/delivery/lease.ts). One process at
-- a time, so per-endpoint limits, ordering and breaker state are one process's; another process
-- on the file serves the API and takes over when the holder releases the lease at a clean stop or
-- the lease expires. seen_at is the lease's expiry (the holder renews it); owner is a random id
-- per process (`<pid>.<random>@<host>`, the PID and host only for people to read).
CREATE TABLE locks (
  name         TEXT PRIMARY KEY,
  owner        TEXT NOT NULL,
  acquired_at  INTEGER NOT NULL,
  seen_at      INTEGER NOT NULL             -- the holder's heartbeat
) WITHOUT ROWID;

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
-- A request (POST /v1/requests) is a delivery of channel `request`: one queue, one claim and settle
-- engine. target_key is its origin (`@https://host:port`), under which its rows take their
-- concurrency slots and breaker turns (DUE_KEY in store/delivery-claim.ts), so one dead host holds
-- back only its own requests. NULL on every other row.
ALTER TABLE deliveries ADD COLUMN target_key TEXT;
-- The claim's second path: when the due rows at the head of the queue all belong to saturated or
-- paused endpoints (or blocked ordering keys), it takes each other key's due rows from here instead
-- of reading past them. Keyed by endpoint, by target_key for requests, or by `#<channel>` for the
-- other rows without an endpoint (inbox, email, notify-webhook).
CREATE INDEX deliveries_endpoint_due ON deliveries (coalesce(endpoint_id, target_key, '#' || channel), next_attempt_at, id) WHERE status = 'pending';
-- The target of a request, copied at enqueue and never changed; one row per `request` delivery,
-- removed with it by retention. The public id is `req_` + the delivery id's suffix.
CREATE TABLE requests (
  delivery_id     TEXT PRIMARY KEY REFERENCES deliveries (id) ON DELETE CASCADE,
  app_id          TEXT NOT NULL DEFAULT 'default',
  method          TEXT NOT NULL,
  url             TEXT NOT NULL,
  headers         TEXT NOT NULL DEFAULT '{}', -- JSON object of custom headers, as accepted
  body            TEXT,                       -- the bytes sent on every attempt; NULL = no body
  body_json       INTEGER NOT NULL DEFAULT 0, -- 1: body is JSON, sent as application/json
  signing_secret  TEXT,                       -- whsec_…; NULL = unsigned
  source          TEXT,
  ref_id          TEXT,
  dedup_key       TEXT,
  timeout_ms      INTEGER NOT NULL,
  retry_schedule  TEXT,                       -- JSON array of ms; NULL = the global schedule
  deliver_at      INTEGER NOT NULL,
  created_at      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX requests_dedup ON requests (app_id, dedup_key) WHERE dedup_key IS NOT NULL;
CREATE INDEX requests_app ON requests (app_id, delivery_id);
CREATE INDEX requests_source ON requests (source, delivery_id) WHERE source IS NOT NULL;
CREATE INDEX requests_ref ON requests (ref_id, delivery_id) WHERE ref_id IS NOT NULL;

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

-- ── v12: a success's attempt in its delivery row ──
-- The attempt that succeeded is kept in its delivery row when it carries no error and at most
-- 1 KiB of response body (the usual success), instead of an attempts row: no row and no two
-- index entries (attempts_delivery, attempts_started) on the happy path. Its attempt number is
-- the row's attempts and its status code last_status_code; readers list it after the row's
-- attempts, and a redeliver moves it into attempts first (docs/delivery.md, "Attempt log").
ALTER TABLE deliveries ADD COLUMN success_started_at INTEGER;
ALTER TABLE deliveries ADD COLUMN success_duration_ms INTEGER;
ALTER TABLE deliveries ADD COLUMN success_body TEXT;

-- ── v13: the ordering trigger fires on completed_at ──
-- Every statement that finishes a row (success, dead, cancelled) sets completed_at, and the claim
-- (the one UPDATE of status run for every delivery that does not finish one) does not. Declared on
-- status, the trigger's WHEN was evaluated for every claimed row: ~0.25 µs each (docs/performance.md).
-- A new file gets it declared so above; an older one is migrated by dropping and creating it
-- (src/store/migrations.ts).

-- ── v14: pull endpoints ──
-- A pull endpoint (docs/pull-endpoints.md) gets deliveries like any endpoint, but consumers claim
-- them over the API; the dispatcher never does. Its url and secret are ''. Never changes.
-- Key roles gain `consumer`; pull attempts log acked | released | snoozed | expired.
ALTER TABLE endpoints ADD COLUMN mode TEXT NOT NULL DEFAULT 'push';  -- push | pull

PRAGMA user_version = 14;
