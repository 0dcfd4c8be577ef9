-- A message's status moves out of its row (issue 4). Every status change used to write a new version of the whole
-- dead_letters row (~1.4 KB with its headers and body) and an entry in each of its ten indexes, twice per replayed
-- message (dead → replaying when the job is created, replaying → replayed when the broker confirms), plus the
-- vacuuming after. dead_letter_states holds the status of every message that is not plainly dead: a message without a
-- row is 'dead' (most messages, and every new one: the drainer writes no row for them, only for held messages). The
-- first change inserts the row (INSERT … ON CONFLICT, which also settles two jobs racing for one message); later
-- changes rewrite ~100 bytes and the few indexes below. A row may say 'dead' too (a replay that failed, with why).
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
SELECT id, status, status_reason, status_changed_at, status_changed_by, failed_at FROM dead_letters
WHERE status <> 'dead' OR status_reason IS NOT NULL OR status_changed_at IS NOT NULL OR status_changed_by IS NOT NULL;

-- Every message with its status, for ad-hoc SQL and reports (the application joins dead_letter_states itself).
CREATE VIEW message_statuses AS
SELECT d.id AS dead_letter_id, coalesce(st.status, 'dead') AS status, st.status_reason, st.status_changed_at, st.status_changed_by
FROM dead_letters d LEFT JOIN dead_letter_states st ON st.dead_letter_id = d.id;

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
