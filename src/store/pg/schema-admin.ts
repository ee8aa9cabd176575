/**
 * The PostgreSQL schema of the administrative tables (schema.sql is the truth for their columns;
 * docs/architecture.md, "The schema"): API keys, applications, portal tokens, the event-type
 * catalog, and `schema_meta`, which holds the schema version (SQLite's PRAGMA user_version).
 *
 * Types follow one rule for every PostgreSQL table: SQLite INTEGER is `bigint` (read back as a
 * JS number, src/store/pg/pool.ts), 0/1 flags stay `integer` 0/1 so rows read as SQLite's do,
 * REAL is `double precision`, TEXT is `text`. Keys that lists order or page by are `COLLATE "C"`:
 * SQLite compares text bytewise, and a database created with a language locale would otherwise
 * order `key_…` ids and catalog names differently (and break keyset pagination against SQLite).
 */

/** The version table: one row, the schema version this database is at. */
export const SCHEMA_META_DDL = `
CREATE TABLE schema_meta (
  name   text COLLATE "C" PRIMARY KEY,
  value  bigint NOT NULL
);
`

/** api_keys, apps, portal_tokens and event_types, with their indexes and the default application. */
export const ADMIN_DDL = `
-- ───────────────────────── API keys ─────────────────────────
CREATE TABLE api_keys (
  id            text COLLATE "C" PRIMARY KEY, -- key_…
  name          text NOT NULL,
  role          text NOT NULL,                -- admin | publisher | viewer | consumer
  hash          text NOT NULL UNIQUE,         -- hex SHA-256 of the key; the key itself is never stored
  prefix        text NOT NULL,                -- first characters, to recognise a key in lists
  created_at    bigint NOT NULL,
  last_used_at  bigint,
  revoked_at    bigint,
  app_id        text COLLATE "C"              -- NULL: the key acts in every application
);

-- ───────────────────────── applications ─────────────────────────
-- Applications (tenants, docs/applications.md); default always exists.
CREATE TABLE apps (
  id          text COLLATE "C" PRIMARY KEY,   -- the client's own id, or app_…
  name        text NOT NULL,
  metadata    text NOT NULL DEFAULT '{}',
  created_at  bigint NOT NULL,
  updated_at  bigint NOT NULL,
  deleted_at  bigint                          -- kept, so a deleted id is never reused for other rows
);
CREATE INDEX apps_created ON apps (created_at DESC, id DESC);
INSERT INTO apps (id, name, created_at, updated_at)
  VALUES ('default', 'Default', (extract(epoch FROM clock_timestamp()) * 1000)::bigint, (extract(epoch FROM clock_timestamp()) * 1000)::bigint);
-- Portal tokens (ptk_…) are signed and also stored, so deleting their application revokes them.
CREATE TABLE portal_tokens (
  id          text COLLATE "C" PRIMARY KEY,   -- ptk_…, the id inside the signed token
  app_id      text COLLATE "C" NOT NULL,
  read_only   integer NOT NULL DEFAULT 0,
  expires_at  bigint NOT NULL,
  created_at  bigint NOT NULL
);
CREATE INDEX portal_tokens_app ON portal_tokens (app_id, expires_at);

-- ───────────────────────── event-type catalog ─────────────────────────
-- A JSON Schema (draft 2020-12) per type validates data at ingest.
CREATE TABLE event_types (
  name         text COLLATE "C" PRIMARY KEY,
  description  text NOT NULL DEFAULT '',
  schema       text,                          -- JSON Schema, or NULL for none
  example      text,                          -- JSON example data, sent by the endpoint test
  deprecated   integer NOT NULL DEFAULT 0,
  archived     integer NOT NULL DEFAULT 0,
  version      bigint NOT NULL,               -- moves on every PUT; compiled validators are cached by it
  created_at   bigint NOT NULL,
  updated_at   bigint NOT NULL
);
`
