/** SQLite schema steps v0 → v4 (migrations.ts assembles every step; schema.sql is the truth for new files). */
export const STEPS_V1_V4: readonly string[] = [
  /* v0 → v1: the webhook engine: events, endpoints, deliveries, attempts, API keys. */
  `
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
CREATE INDEX events_created ON events (created_at);

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
CREATE TABLE deliveries (
  id               TEXT PRIMARY KEY,         -- dlv_…
  channel          TEXT NOT NULL,            -- webhook | inbox | email
  dedup_key        TEXT NOT NULL UNIQUE,     -- (event, endpoint) or (notification, recipient, channel)
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
CREATE INDEX deliveries_event ON deliveries (event_id) WHERE event_id IS NOT NULL;
-- No status column here: claim and settle change status, and every index on it costs a delete + insert.
CREATE INDEX deliveries_endpoint ON deliveries (endpoint_id, id) WHERE endpoint_id IS NOT NULL;
CREATE INDEX deliveries_notification ON deliveries (notification_id) WHERE notification_id IS NOT NULL;
-- Retention walks this. Claims never touch it; the earlier (status, completed_at) WHERE status IN
-- (…) form cost ~25% of claim+settle throughput (bench/store.ts).
CREATE INDEX deliveries_finished ON deliveries (completed_at) WHERE completed_at IS NOT NULL;
CREATE INDEX deliveries_group ON deliveries (group_key) WHERE group_key IS NOT NULL;

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
`,
  /* v1 → v2: notifications: directory, subscriptions, preferences, templates, inbox. */
  `
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
  created_at       INTEGER NOT NULL
);
CREATE INDEX inbox_user ON inbox_messages (user_id, archived, id);
CREATE INDEX inbox_created ON inbox_messages (created_at);

-- unread_count per user, maintained in the same transaction as every state change.
CREATE TABLE inbox_counters (
  user_id       TEXT PRIMARY KEY,
  unread_count  INTEGER NOT NULL DEFAULT 0,
  last_seq      INTEGER NOT NULL DEFAULT 0   -- the stream's per-user event id
);

-- The live stream's durable log: the last 1,000 events per user, for Last-Event-ID replay.
CREATE TABLE inbox_stream (
  user_id     TEXT NOT NULL,
  seq         INTEGER NOT NULL,
  kind        TEXT NOT NULL,                 -- notification | state | unread_count
  data        TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (user_id, seq)
) WITHOUT ROWID;
`,
  /* v2 → v3: inbox messages carry their own stream event ids; one smaller per-user index (see schema.sql). */
  `
ALTER TABLE inbox_messages ADD COLUMN seq INTEGER;
ALTER TABLE inbox_messages ADD COLUMN unread_after INTEGER;
DROP INDEX inbox_user;
CREATE INDEX inbox_user ON inbox_messages (user_id, archived);
`,
  /*
   * v3 → v4: deliveries lose dedup_key; one delivery per (event, endpoint) and per (notification,
   * recipient, channel) is now kept by the unique indexes deliveries_event and
   * deliveries_notification. SQLite cannot drop a UNIQUE column, so the table is rebuilt: copied
   * aside, dropped, created as in schema.sql and filled again (migrate() runs steps with foreign
   * keys off, so the drop does not cascade into attempts). v3's dedup keys were exactly these
   * tuples, so the copy cannot hit a duplicate; if one did, the step would fail and roll back.
   */
  `
CREATE TABLE deliveries_v3 AS SELECT * FROM deliveries;
DROP TABLE deliveries;
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
INSERT INTO deliveries (id, channel, event_id, endpoint_id, notification_id, recipient, event_type, ordering_key,
    payload, group_key, status, attempts, max_attempts, next_attempt_at, claim_token, lease_until, last_status_code,
    last_error, created_at, updated_at, completed_at)
  SELECT id, channel, event_id, endpoint_id, notification_id, recipient, event_type, ordering_key,
    payload, group_key, status, attempts, max_attempts, next_attempt_at, claim_token, lease_until, last_status_code,
    last_error, created_at, updated_at, completed_at
  FROM deliveries_v3 ORDER BY rowid;
DROP TABLE deliveries_v3;
`,
]
