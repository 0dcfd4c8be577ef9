-- JetStream replays (docs/jetstream.md#replay): copies the stream's duplicate window dropped because a previous run had
-- published them already (its PubAck said `duplicate`). Only added, with a default: a previous release's executor
-- never writes it.
ALTER TABLE replay_jobs ADD COLUMN duplicates integer NOT NULL DEFAULT 0;
