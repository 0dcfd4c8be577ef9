-- Staged replays (issue 18): a canary, an observation window, ramp stages, automatic halt (docs/ARCHITECTURE.md#stages-and-halts).

-- A halted job keeps its unpublished items and its pauses until an operator resumes or cancels it (or the halt times out).
ALTER TABLE replay_jobs DROP CONSTRAINT replay_jobs_status_check;
ALTER TABLE replay_jobs ADD CONSTRAINT replay_jobs_status_check CHECK (status IN ('pending', 'running', 'halted', 'completed', 'cancelled', 'failed'));

-- stage_bounds: the last item seq of each stage, ascending, the last one the job's total; NULL for an unstaged job.
-- stage: the stage being published or observed. stage_published_at: when every item of that stage had its outcome
-- (its observation window starts then). not_before: claimJob leaves the job alone until then, so a job observing its
-- window holds no lease. refailures_since: re-failures that came back before it were seen by the operator who
-- resumed the job and no longer count toward a halt. group_ids: the error groups of the job's messages, for
-- "failed again in a new group". stage_log: when each stage started and finished publishing.
ALTER TABLE replay_jobs
  ADD COLUMN stage_bounds       integer[],
  ADD COLUMN stage              integer     NOT NULL DEFAULT 0,
  ADD COLUMN stage_published_at timestamptz,
  ADD COLUMN window_ms          integer,
  ADD COLUMN halt_share         real,
  ADD COLUMN halt_min           integer,
  ADD COLUMN not_before         timestamptz,
  ADD COLUMN halted_at          timestamptz,
  ADD COLUMN refailures_since   timestamptz,
  ADD COLUMN group_ids          bigint[],
  ADD COLUMN stage_log          jsonb       NOT NULL DEFAULT '[]';
CREATE INDEX replay_jobs_halted_idx ON replay_jobs (halted_at) WHERE status = 'halted';

-- Every halt with its evidence; the alert evaluator notices new ones by id, as it notices new groups.
CREATE TABLE replay_halts (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id      bigint      NOT NULL REFERENCES replay_jobs(id) ON DELETE CASCADE,
  stage       integer     NOT NULL,
  reason      text        NOT NULL CHECK (reason IN ('share', 'new-group')),
  evidence    jsonb       NOT NULL,
  decided_at  timestamptz NOT NULL DEFAULT now(),
  ended_at    timestamptz,
  ended_by    text,
  outcome     text        CHECK (outcome IN ('resumed', 'cancelled', 'timed-out'))
);
CREATE INDEX replay_halts_job_idx ON replay_halts (job_id, id);

-- Re-failure linking is a join at read and decision time (replayed copy's lineage_replay_id = replay_items.replay_id),
-- so the drainer writes nothing more than the column it already stored. This index holds only the rows that carry a
-- replay id: stored letters that never went through a replay (nearly all of them) cost it nothing.
CREATE INDEX dead_letters_lineage_replay_idx ON dead_letters (lineage_replay_id) WHERE lineage_replay_id IS NOT NULL;

-- Alerts gain 'replay-halted': one alert per halt.
ALTER TABLE alert_rules DROP CONSTRAINT alert_rules_kind_check;
ALTER TABLE alert_rules DROP CONSTRAINT alert_rules_check;
ALTER TABLE alert_rules ADD CONSTRAINT alert_rules_kind_check CHECK (kind IN ('source-rate', 'group-rate', 'new-group', 'new-finding', 'replay-halted'));
ALTER TABLE alert_rules ADD CONSTRAINT alert_rules_check CHECK ((kind IN ('new-group', 'new-finding', 'replay-halted')) = (threshold_per_minute IS NULL));
ALTER TABLE alert_cursor ADD COLUMN last_halt_id bigint NOT NULL DEFAULT 0;

-- From this many messages the plan offers a staged replay by default (Settings).
ALTER TABLE replay_confirm_settings ADD COLUMN staged_from_messages integer NOT NULL DEFAULT 1000 CHECK (staged_from_messages > 0);
