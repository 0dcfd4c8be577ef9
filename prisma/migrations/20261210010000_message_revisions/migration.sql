-- Edit and replay (issue 18, docs/ARCHITECTURE.md#revisions). An edit never changes the stored dead letter: each one is
-- a revision, numbered from 1 per message, holding the whole edited message (body bytes exactly, the typed header
-- table as json so its key order survives, the properties) and its diff against the one before. A replay job freezes
-- which revision each of its items publishes (replay_items.revision, NULL: the original).
CREATE TABLE message_revisions (
  dead_letter_id bigint NOT NULL REFERENCES dead_letters (id) ON DELETE CASCADE,
  revision integer NOT NULL CHECK (revision >= 1),
  body bytea NOT NULL,
  body_size integer NOT NULL,
  body_encoding text NOT NULL,
  headers json NOT NULL,
  properties jsonb NOT NULL,
  diff jsonb NOT NULL,
  summary text NOT NULL,
  bulk_id text,
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dead_letter_id, revision)
);

ALTER TABLE replay_items ADD COLUMN revision integer;
