-- Replay jobs and their items, pauses (order-sensitive entities), resolves and the audit log (issue 4).

-- A source is a terminal DLQ ('dlq') or the hold queue the pause guards park messages in ('hold'): the drainer
-- stores deliveries of a hold source with status 'held'.
ALTER TABLE sources ADD COLUMN kind text NOT NULL DEFAULT 'dlq' CHECK (kind IN ('dlq', 'hold'));

-- Status bookkeeping: why a message is resolved or why its last replay failed, when and by whom.
-- held_from: for held messages, the queue the guard took them from (where release sends them back).
-- lineage_replay_id: the x-lazarus-replay-id of the replay this copy died after (links it to replay_items).
ALTER TABLE dead_letters
  ADD COLUMN status_reason      text,
  ADD COLUMN status_changed_at  timestamptz,
  ADD COLUMN status_changed_by  text,
  ADD COLUMN held_from          text,
  ADD COLUMN lineage_replay_id  text;

CREATE INDEX dead_letters_held_idx ON dead_letters (held_from, entity_key, id) WHERE status = 'held';
CREATE INDEX dead_letters_lineage_idx ON dead_letters (lineage_origin_id, id) WHERE lineage_origin_id IS NOT NULL;

-- Group counters move with message status (product.md §11: never GROUP BY the message table per request).
ALTER TABLE error_groups
  ADD COLUMN replayed_count bigint NOT NULL DEFAULT 0,
  ADD COLUMN resolved_count bigint NOT NULL DEFAULT 0;

CREATE TABLE replay_jobs (
  id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind                text        NOT NULL DEFAULT 'replay' CHECK (kind IN ('replay', 'release')),
  status              text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'completed', 'cancelled', 'failed')),
  selection           jsonb       NOT NULL,
  target              jsonb       NOT NULL,
  rate_per_second     integer     NOT NULL CHECK (rate_per_second > 0),
  pause_entities      boolean     NOT NULL DEFAULT false,
  plan                jsonb       NOT NULL,
  total               integer     NOT NULL DEFAULT 0,
  published           integer     NOT NULL DEFAULT 0,
  confirmed           integer     NOT NULL DEFAULT 0,
  unroutable          integer     NOT NULL DEFAULT 0,
  failed              integer     NOT NULL DEFAULT 0,
  skipped             integer     NOT NULL DEFAULT 0,
  released            integer     NOT NULL DEFAULT 0,
  cancel_requested_at timestamptz,
  cancel_requested_by text,
  lease_owner         text,
  lease_expires_at    timestamptz,
  error               text,
  created_by          text        NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  started_at          timestamptz,
  finished_at         timestamptz,
  updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX replay_jobs_active_idx ON replay_jobs (id) WHERE status IN ('pending', 'running');
CREATE INDEX replay_jobs_created_idx ON replay_jobs (created_at DESC, id DESC);

-- One row per message to publish, in publish order (seq). kind 'release' items send held messages back.
-- status: pending → in_flight (written before publishing) → confirmed | unroutable | failed | skipped | cancelled.
CREATE TABLE replay_items (
  job_id         bigint      NOT NULL REFERENCES replay_jobs(id) ON DELETE CASCADE,
  seq            integer     NOT NULL,
  dead_letter_id bigint      NOT NULL,
  kind           text        NOT NULL DEFAULT 'replay' CHECK (kind IN ('replay', 'release')),
  replay_id      text        NOT NULL,
  status         text        NOT NULL DEFAULT 'pending',
  exchange       text,
  routing_key    text,
  error          text,
  published_at   timestamptz,
  finished_at    timestamptz,
  PRIMARY KEY (job_id, seq)
);
CREATE INDEX replay_items_dead_letter_idx ON replay_items (dead_letter_id, job_id);
CREATE INDEX replay_items_replay_id_idx ON replay_items (replay_id);
CREATE INDEX replay_items_open_idx ON replay_items (job_id, seq) WHERE status IN ('pending', 'in_flight');

-- The pause registry. queue is the consumer's queue the guard protects (the dead letters' origin queue);
-- entity_key NULL pauses the whole queue. version is the registry version after this row's last change.
CREATE SEQUENCE pause_registry_version;
CREATE TABLE pauses (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  source_id       bigint      REFERENCES sources(id),
  vhost           text        NOT NULL DEFAULT '/',
  queue           text        NOT NULL,
  entity_key      text,
  entity_key_rule jsonb,
  status          text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'releasing', 'resumed')),
  reason          text,
  created_by      text        NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  replay_job_id   bigint      REFERENCES replay_jobs(id),
  resumed_at      timestamptz,
  resumed_by      text,
  version         bigint      NOT NULL
);
CREATE UNIQUE INDEX pauses_active_key ON pauses (vhost, queue, coalesce(entity_key, '')) WHERE status <> 'resumed';
CREATE INDEX pauses_job_idx ON pauses (replay_job_id) WHERE replay_job_id IS NOT NULL;

CREATE TABLE audit_log (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at           timestamptz NOT NULL DEFAULT now(),
  actor        text        NOT NULL,
  action       text        NOT NULL,
  subject_type text        NOT NULL,
  subject_id   text,
  summary      text        NOT NULL,
  details      jsonb       NOT NULL DEFAULT '{}',
  outcome      text
);
CREATE INDEX audit_log_at_idx ON audit_log (at DESC, id DESC);
CREATE INDEX audit_log_subject_idx ON audit_log (subject_type, subject_id, id DESC);
