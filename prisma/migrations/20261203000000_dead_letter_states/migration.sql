-- A message's status moves out of its row (issue 4). Every status change used to write a new version of the whole
-- dead_letters row (~1.4 KB with its headers and body) and an entry in each of its ten indexes, twice per replayed
-- message (dead → replaying when the job is created, replaying → replayed when the broker confirms), plus the
-- vacuuming after. dead_letter_states holds one narrow row per message instead, written by the drainer in the same
-- statement as the message; a status change rewrites ~100 bytes and the few indexes below.
--
-- failed_at is copied (it never changes) so a status filter can walk dead_letter_states_status_idx in list order:
-- queries join ON st.dead_letter_id = d.id AND st.failed_at = d.failed_at, which lets the planner produce
-- d's (failed_at, id) order from this table's index (lib/server/messages/message-filter-sql.ts, MESSAGES_FROM).
CREATE TABLE dead_letter_states (
  dead_letter_id    bigint      PRIMARY KEY,
  status            text        NOT NULL DEFAULT 'dead',
  status_reason     text,
  status_changed_at timestamptz,
  status_changed_by text,
  failed_at         timestamptz NOT NULL
) WITH (fillfactor = 80);

INSERT INTO dead_letter_states (dead_letter_id, status, status_reason, status_changed_at, status_changed_by, failed_at)
SELECT id, status, status_reason, status_changed_at, status_changed_by, failed_at FROM dead_letters;

-- The indexes that followed the status, moved with it.
CREATE INDEX dead_letter_states_status_idx ON dead_letter_states (status, failed_at DESC, dead_letter_id DESC) WHERE status <> 'dead';
CREATE INDEX dead_letter_states_retention_idx ON dead_letter_states (status_changed_at, dead_letter_id) WHERE status IN ('replayed', 'resolved');
CREATE INDEX dead_letter_states_held_idx ON dead_letter_states (dead_letter_id) WHERE status = 'held';
DROP INDEX dead_letters_status_idx;
DROP INDEX dead_letters_retention_idx;
DROP INDEX dead_letters_held_idx;
-- held_from never changes: the messages a hold source stored, by the queue they were held from.
CREATE INDEX dead_letters_held_from_idx ON dead_letters (held_from, entity_key, id) WHERE held_from IS NOT NULL;

ALTER TABLE dead_letters DROP COLUMN status, DROP COLUMN status_reason, DROP COLUMN status_changed_at, DROP COLUMN status_changed_by;
