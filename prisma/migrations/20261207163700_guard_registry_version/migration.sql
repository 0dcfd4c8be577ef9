-- Which registry version each guard holds (docs/ARCHITECTURE.md#pause-hold-release, "Who listens"): a guard's poll says
-- the version of the pause list it read last, so Lazarus can tell the guards listening on a queue from those that hold
-- every change of its pauses. Null for guards older than 2.1, which do not say.
-- Hand-written: Prisma's migrate engine cannot run on our machines.
ALTER TABLE guard_heartbeats ADD COLUMN registry_version bigint;
