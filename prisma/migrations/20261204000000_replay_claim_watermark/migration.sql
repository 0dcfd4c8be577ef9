-- The executor no longer writes each item in_flight before publishing it (one row version and its WAL per message,
-- a third of the claim's cost). It raises claimed_through, the highest seq it has claimed, in the statement that reads
-- the chunk, committed before any of it is published: a pending item at or below it may have reached the broker
-- (it is shown as in_flight, and published again with its replay id after a crash); one above it cannot have.
-- Items written in_flight by an earlier version stay so until their outcome.
ALTER TABLE replay_jobs ADD COLUMN claimed_through integer NOT NULL DEFAULT 0;
