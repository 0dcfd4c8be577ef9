-- Lazarus initial schema: sources, dead letters, error groups and their per-minute arrival buckets.
-- Hand-written: Prisma's migrate engine cannot run on our machines (see README, "Migrations").

CREATE TABLE sources (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  vhost           text        NOT NULL DEFAULT '/',
  queue           text        NOT NULL,
  entity_key      jsonb,
  order_sensitive boolean     NOT NULL DEFAULT false,
  default_target  jsonb       NOT NULL DEFAULT '{"type":"source"}',
  enabled         boolean     NOT NULL DEFAULT true,
  drained_count   bigint      NOT NULL DEFAULT 0,
  last_drain_at   timestamptz,
  last_error      text,
  last_error_at   timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT sources_vhost_queue_key UNIQUE (vhost, queue)
);

CREATE TABLE error_groups (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  signature          text        NOT NULL,
  title              text        NOT NULL,
  error_type         text,
  message_pattern    text,
  count              bigint      NOT NULL DEFAULT 0,
  first_seen         timestamptz NOT NULL,
  last_seen          timestamptz NOT NULL,
  sources            text[]      NOT NULL DEFAULT '{}',
  services           text[]      NOT NULL DEFAULT '{}',
  service_versions   text[]      NOT NULL DEFAULT '{}',
  failure_kinds      text[]      NOT NULL DEFAULT '{}',
  status             text        NOT NULL DEFAULT 'open',
  note               text,
  ticket_url         text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT error_groups_signature_key UNIQUE (signature)
);

-- Counts per group and minute, maintained at ingestion: GROUP BY over the message table is far too slow
-- at a million rows (product.md §11).
CREATE TABLE group_arrivals (
  group_id bigint      NOT NULL REFERENCES error_groups(id) ON DELETE CASCADE,
  minute   timestamptz NOT NULL,
  count    integer     NOT NULL,
  PRIMARY KEY (group_id, minute)
);

-- source_id and group_id carry no foreign keys on purpose: per-row RI triggers cost more than the rest of
-- an ingestion INSERT. The drainer resolves both ids in the same transaction, groups are never deleted, and a
-- source holding dead letters cannot be deleted (lib/server/sources/delete-source.ts).
CREATE TABLE dead_letters (
  id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  source_id            bigint      NOT NULL,
  fingerprint          bytea       NOT NULL,
  seen_count           integer     NOT NULL DEFAULT 1,
  status               text        NOT NULL DEFAULT 'dead',
  body                 bytea       NOT NULL,
  body_size            integer     NOT NULL,
  body_encoding        text        NOT NULL,
  body_preview         text,
  properties           jsonb       NOT NULL,
  -- json, not jsonb: jsonb reorders keys, and a replay re-encodes the header table in its received order.
  headers              json        NOT NULL,
  x_death              json,
  delivery_exchange    text        NOT NULL,
  delivery_routing_key text        NOT NULL,
  redelivered          boolean     NOT NULL,
  death_reason         text,
  attempts             integer,
  origin_exchange      text,
  origin_routing_keys  text[],
  origin_queue         text,
  first_death_at       timestamptz,
  last_death_at        timestamptz,
  failed_at            timestamptz NOT NULL,
  error_type           text,
  error_message        text,
  error_stack          text,
  failure_kind         text        NOT NULL,
  service              text,
  service_version      text,
  framework            text        NOT NULL,
  entity_key           text,
  group_id             bigint      NOT NULL,
  flags                text[]      NOT NULL DEFAULT '{}',
  lineage_origin_id    text,
  replay_count         integer     NOT NULL DEFAULT 0,
  ingested_at          timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT dead_letters_source_fingerprint_key UNIQUE (source_id, fingerprint)
);

-- lz4 compresses bodies, headers and stacks several times faster than the default pglz, which dominated the
-- per-row cost of ingestion. Builds without lz4 (e.g. the embedded PGlite) keep the default.
DO $$
BEGIN
  ALTER TABLE dead_letters
    ALTER COLUMN body SET COMPRESSION lz4,
    ALTER COLUMN body_preview SET COMPRESSION lz4,
    ALTER COLUMN headers SET COMPRESSION lz4,
    ALTER COLUMN x_death SET COMPRESSION lz4,
    ALTER COLUMN error_message SET COMPRESSION lz4,
    ALTER COLUMN error_stack SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
  RAISE NOTICE 'lz4 compression unavailable; keeping the default';
END $$;

CREATE INDEX dead_letters_failed_at_idx ON dead_letters (failed_at DESC, id DESC);
CREATE INDEX dead_letters_group_idx ON dead_letters (group_id, failed_at DESC, id DESC);
CREATE INDEX dead_letters_source_idx ON dead_letters (source_id, failed_at DESC, id DESC);
