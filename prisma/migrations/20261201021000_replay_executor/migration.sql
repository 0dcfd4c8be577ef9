-- Replay executor bookkeeping (issue 4): cancelled items per job, the publish rate the running executor measured
-- (GET /api/replays shows it; the web process may not be the one publishing), and consecutive failed runs.
ALTER TABLE replay_jobs
  ADD COLUMN cancelled       integer     NOT NULL DEFAULT 0,
  ADD COLUMN current_rate    real,
  ADD COLUMN rate_sampled_at timestamptz,
  ADD COLUMN run_failures    integer     NOT NULL DEFAULT 0;

-- Every item is updated twice while its job runs (in_flight, then its outcome). With no index on status and room left
-- on each page, both updates are HOT: no index entries, no new pages. The executor reads open items along the primary
-- key from its position (job_id, seq > n), which needs no status index.
DROP INDEX replay_items_open_idx;
ALTER TABLE replay_items SET (fillfactor = 50);
