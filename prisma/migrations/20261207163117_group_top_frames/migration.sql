-- The frames a group's signature hashed (docs/framework-headers.md#the-fingerprint): up to three top in-app frames,
-- or the top frame, as `module.function`, throw site first. Groups whose titles read the same ("TimeoutException:
-- The operation has timed out after <duration>") differ only there, so the list and the group page show them.
-- Written when the drainer creates a group (lib/server/engines/drainer/store-batch.ts); groups created before this
-- migration keep an empty array: their frames are stored only inside the messages' stacks, and parsing those is the
-- normaliser's (lib/server/ingest/normalise/stack-frames.ts), not SQL's. A constant default: adding it rewrites nothing.
ALTER TABLE error_groups ADD COLUMN top_frames text[] NOT NULL DEFAULT '{}';
