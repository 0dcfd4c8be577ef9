-- The admin's choice, per JetStream source, to delete a captured message from its stream once it is stored
-- (docs/jetstream.md#removing-captured-messages). Off by default: the message is the team's, other consumers and
-- tools may still read it, and the stream's own limits decide how long it stays. Only JetStream sources have a stream
-- to delete from. Only added: a previous release's processes never read the column and delete nothing.
ALTER TABLE sources ADD COLUMN remove_after_capture boolean NOT NULL DEFAULT false;
ALTER TABLE sources ADD CONSTRAINT sources_remove_after_capture_check CHECK (NOT remove_after_capture OR kind = 'jetstream');
