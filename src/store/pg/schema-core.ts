/**
 * The PostgreSQL schema of the core tables (schema.sql is the truth for their columns; docs/operations.md, "PostgreSQL and several nodes"):
 * events, endpoints, deliveries, attempts and requests, their indexes, the two ordering triggers
 * as PL/pgSQL, and two small tables only PostgreSQL needs: `endpoint_versions` (the counters
 * behind endpoints' `version()`/`settingsVersion()`, shared by every node) and `endpoint_tokens`
 * (the rate-limit buckets the claim keeps in the database, src/store/pg/delivery-claim.ts).
 *
 * Types follow src/store/pg/schema-admin.ts: SQLite INTEGER is `bigint` (read back as a JS number
 * by the pool), 0/1 flags stay `integer`, REAL is `double precision`. Ids and every key a list
 * pages by or a claim orders by are `COLLATE "C"`, so text compares bytewise as in SQLite.
 */

/** The next_attempt_at of a row waiting for its ordering key's turn (WAITING_IN_ORDER, as a SQL literal). */
const WAITING = '8640000000000000'

/**
 * The ordered endpoints' trigger (CORE_DDL's function deliveries_next_in_order), declared on
 * completed_at, which every finishing statement sets and the claim does not (v13).
 */
export const NEXT_IN_ORDER_TRIGGER = `CREATE TRIGGER deliveries_next_in_order AFTER UPDATE OF completed_at ON deliveries FOR EACH ROW
  WHEN (NEW.ordering_key IS NOT NULL AND NEW.endpoint_id IS NOT NULL
    AND OLD.status IN ('pending', 'in_flight') AND NEW.status IN ('success', 'dead', 'cancelled'))
  EXECUTE FUNCTION deliveries_next_in_order();`

/** events, endpoints, deliveries, attempts, requests, endpoint_versions, endpoint_tokens and the ordering triggers. */
export const CORE_DDL = `
-- ───────────────────────── events ─────────────────────────
CREATE TABLE events (
  id            text COLLATE "C" PRIMARY KEY,  -- evt_…
  client_id     text COLLATE "C",              -- the client's id or Idempotency-Key, for dedup
  type          text COLLATE "C" NOT NULL,
  ordering_key  text COLLATE "C",
  body          text NOT NULL,                 -- the envelope, serialised once, sent byte for byte
  created_at    bigint NOT NULL,
  app_id        text COLLATE "C" NOT NULL DEFAULT 'default'
);
CREATE UNIQUE INDEX events_client_id ON events (app_id, client_id) WHERE client_id IS NOT NULL;
CREATE INDEX events_type ON events (type, id);
CREATE INDEX events_app ON events (app_id, id) WHERE app_id <> 'default';

-- ───────────────────────── endpoints ─────────────────────────
CREATE TABLE endpoints (
  id                     text COLLATE "C" PRIMARY KEY, -- ep_…
  app_id                 text COLLATE "C" NOT NULL DEFAULT 'default',
  url                    text NOT NULL,
  description            text NOT NULL DEFAULT '',
  event_types            text,                 -- JSON array of patterns; NULL = every type
  headers                text NOT NULL DEFAULT '{}',
  method                 text NOT NULL DEFAULT 'POST',
  timeout_ms             bigint NOT NULL DEFAULT 15000,
  max_concurrency        bigint NOT NULL DEFAULT 16,
  rate_limit             double precision,     -- requests per second; NULL = unlimited
  ordered                integer NOT NULL DEFAULT 0,
  retry_schedule         text,                 -- JSON array of ms; NULL = the global schedule
  signature              text NOT NULL DEFAULT 'standard',
  secret                 text NOT NULL,
  previous_secrets       text NOT NULL DEFAULT '[]',
  metadata               text NOT NULL DEFAULT '{}',
  disabled               integer NOT NULL DEFAULT 0,
  disabled_reason        text,
  deleted_at             bigint,
  last_success_at        bigint,
  last_failure_at        bigint,
  failing_since          bigint,
  consecutive_failures   bigint NOT NULL DEFAULT 0,
  failures_since_success bigint NOT NULL DEFAULT 0,
  paused_until           bigint,
  pause_count            bigint NOT NULL DEFAULT 0,
  recent_failures        bigint NOT NULL DEFAULT 0,
  recent_attempts        bigint NOT NULL DEFAULT 0,
  breaker_threshold      bigint,
  breaker_pause_ms       bigint,
  breaker_max_pause_ms   bigint,
  created_at             bigint NOT NULL,
  updated_at             bigint NOT NULL,
  mode                   text NOT NULL DEFAULT 'push' -- push | pull (v14, docs/pull-endpoints.md)
);
CREATE INDEX endpoints_app ON endpoints (app_id, id) WHERE deleted_at IS NULL;
-- One row: what endpoints' version() and settingsVersion() read (a cache on any node compares them).
CREATE TABLE endpoint_versions (
  id                integer PRIMARY KEY CHECK (id = 1),
  version           bigint NOT NULL,
  settings_version  bigint NOT NULL
);
INSERT INTO endpoint_versions (id, version, settings_version) VALUES (1, 0, 0);
-- Each rate-limited endpoint's token bucket, spent by the claims of every node under the
-- endpoint's advisory lock (src/store/pg/delivery-claim.ts).
CREATE TABLE endpoint_tokens (
  endpoint_id  text COLLATE "C" PRIMARY KEY REFERENCES endpoints (id) ON DELETE CASCADE,
  tokens       double precision NOT NULL,
  updated_at   bigint NOT NULL
);

-- ───────────────────────── deliveries (the queue) ─────────────────────────
CREATE TABLE deliveries (
  id               text COLLATE "C" PRIMARY KEY, -- dlv_…
  app_id           text COLLATE "C" NOT NULL DEFAULT 'default',
  channel          text COLLATE "C" NOT NULL,
  event_id         text COLLATE "C" REFERENCES events (id),
  endpoint_id      text COLLATE "C" REFERENCES endpoints (id),
  notification_id  text COLLATE "C",
  recipient        text COLLATE "C",
  event_type       text COLLATE "C" NOT NULL,
  ordering_key     text COLLATE "C",
  payload          text,
  group_key        text COLLATE "C",
  status           text COLLATE "C" NOT NULL DEFAULT 'pending',
  attempts         bigint NOT NULL DEFAULT 0,
  max_attempts     bigint NOT NULL,
  next_attempt_at  bigint NOT NULL,
  claim_token      text COLLATE "C",
  lease_until      bigint,
  last_status_code bigint,
  last_error       text,
  created_at       bigint NOT NULL,
  updated_at       bigint NOT NULL,
  completed_at     bigint,
  target_key       text COLLATE "C",            -- a request's origin key (@<origin>)
  -- v12: the success's attempt, kept here instead of an attempts row (keptInRow, src/store/delivery-types.ts)
  success_started_at  bigint,
  success_duration_ms bigint,
  success_body        text
);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX deliveries_leases ON deliveries (lease_until) WHERE status = 'in_flight';
-- The claim counts each endpoint's rows in flight (multi-node max_concurrency) from here.
CREATE INDEX deliveries_in_flight ON deliveries (endpoint_id) WHERE status = 'in_flight';
CREATE INDEX deliveries_order_barrier ON deliveries (endpoint_id, ordering_key, id)
  WHERE status IN ('pending', 'in_flight') AND ordering_key IS NOT NULL;
CREATE UNIQUE INDEX deliveries_event ON deliveries (event_id, endpoint_id) WHERE event_id IS NOT NULL;
CREATE INDEX deliveries_endpoint ON deliveries (endpoint_id, id) WHERE endpoint_id IS NOT NULL;
CREATE UNIQUE INDEX deliveries_notification ON deliveries (notification_id, recipient, channel)
  WHERE notification_id IS NOT NULL;
CREATE INDEX deliveries_finished ON deliveries (completed_at) WHERE completed_at IS NOT NULL;
CREATE INDEX deliveries_group ON deliveries (group_key) WHERE group_key IS NOT NULL;
CREATE INDEX deliveries_dead ON deliveries (id) WHERE status = 'dead';
CREATE INDEX deliveries_dead_endpoint ON deliveries (endpoint_id, id) WHERE status = 'dead';
CREATE INDEX deliveries_cancelled ON deliveries (id) WHERE status = 'cancelled';
CREATE INDEX deliveries_endpoint_due ON deliveries ((coalesce(endpoint_id, target_key, '#' || channel)), next_attempt_at, id)
  WHERE status = 'pending';
CREATE INDEX deliveries_app ON deliveries (app_id, id) WHERE app_id <> 'default';

-- Ordered endpoints (docs/delivery.md; schema.sql's trigger of the same name): when a row of an
-- ordering key finishes, the oldest unfinished row left of its key is due if it was waiting.
CREATE FUNCTION deliveries_next_in_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE deliveries SET next_attempt_at = NEW.updated_at
   WHERE id = (SELECT o.id FROM deliveries o
                WHERE o.endpoint_id = NEW.endpoint_id AND o.ordering_key = NEW.ordering_key
                  AND o.status IN ('pending', 'in_flight') ORDER BY o.id LIMIT 1)
     AND status = 'pending' AND next_attempt_at = ${WAITING};
  RETURN NULL;
END $$;
${NEXT_IN_ORDER_TRIGGER}

-- An endpoint made unordered releases its waiting rows; made ordered, sets aside those behind an older row.
CREATE FUNCTION endpoints_ordered_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.ordered = 0 THEN
    UPDATE deliveries SET next_attempt_at = NEW.updated_at
     WHERE endpoint_id = NEW.id AND status = 'pending' AND next_attempt_at = ${WAITING};
  ELSE
    UPDATE deliveries SET next_attempt_at = ${WAITING}
     WHERE endpoint_id = NEW.id AND status = 'pending' AND attempts = 0 AND ordering_key IS NOT NULL
       AND EXISTS (SELECT 1 FROM deliveries o
                    WHERE o.endpoint_id = deliveries.endpoint_id AND o.ordering_key = deliveries.ordering_key
                      AND o.status IN ('pending', 'in_flight') AND o.id < deliveries.id);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER endpoints_ordered_changed AFTER UPDATE OF ordered ON endpoints FOR EACH ROW
  WHEN (OLD.ordered IS DISTINCT FROM NEW.ordered)
  EXECUTE FUNCTION endpoints_ordered_changed();

CREATE TABLE attempts (
  id             bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  delivery_id    text COLLATE "C" NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
  attempt        bigint NOT NULL,
  started_at     bigint NOT NULL,
  duration_ms    bigint NOT NULL,
  outcome        text NOT NULL,
  status_code    bigint,
  error          text,
  response_body  text
);
CREATE INDEX attempts_delivery ON attempts (delivery_id, id);
CREATE INDEX attempts_started ON attempts (started_at);

-- ───────────────────────── requests ─────────────────────────
CREATE TABLE requests (
  delivery_id     text COLLATE "C" PRIMARY KEY REFERENCES deliveries (id) ON DELETE CASCADE,
  app_id          text COLLATE "C" NOT NULL DEFAULT 'default',
  method          text NOT NULL,
  url             text NOT NULL,
  headers         text NOT NULL DEFAULT '{}',
  body            text,
  body_json       integer NOT NULL DEFAULT 0,
  signing_secret  text,
  source          text COLLATE "C",
  ref_id          text COLLATE "C",
  dedup_key       text COLLATE "C",
  timeout_ms      bigint NOT NULL,
  retry_schedule  text,
  deliver_at      bigint NOT NULL,
  created_at      bigint NOT NULL
);
CREATE UNIQUE INDEX requests_dedup ON requests (app_id, dedup_key) WHERE dedup_key IS NOT NULL;
CREATE INDEX requests_app ON requests (app_id, delivery_id);
CREATE INDEX requests_source ON requests (source, delivery_id) WHERE source IS NOT NULL;
CREATE INDEX requests_ref ON requests (ref_id, delivery_id) WHERE ref_id IS NOT NULL;
`
