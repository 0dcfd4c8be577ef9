-- Approvals (four eyes) and scheduled replays (docs/ARCHITECTURE.md#job-lifecycle, docs/security.md#four-eyes).
-- A job that needs approval is created 'awaiting_approval', a job with a future start 'scheduled': both hold only
-- their items (the frozen selection). No message is marked replaying and no entity paused until the job starts
-- (lib/server/engines/replay-executor/start-job.ts), which turns it 'pending' in one transaction.
ALTER TABLE replay_jobs DROP CONSTRAINT replay_jobs_status_check;
ALTER TABLE replay_jobs ADD CONSTRAINT replay_jobs_status_check
  CHECK (status IN ('pending', 'running', 'completed', 'cancelled', 'failed', 'halted', 'awaiting_approval', 'scheduled', 'rejected', 'expired'));

ALTER TABLE replay_jobs
  -- When a scheduled job starts (the executor starts it at or after this time); set for every 'scheduled' job.
  ADD COLUMN start_at            timestamptz,
  -- Why the job needs a second person's approval (the policy's reasons, or the drift found at start); NULL: none.
  ADD COLUMN approval_reasons    jsonb,
  -- An 'awaiting_approval' job becomes 'expired' after this time.
  ADD COLUMN approval_expires_at timestamptz,
  ADD COLUMN approved_by         text,
  ADD COLUMN approved_at         timestamptz,
  ADD COLUMN rejected_by         text,
  ADD COLUMN rejected_at         timestamptz,
  ADD COLUMN decision_comment    text,
  -- The request's allowFanOut, for the re-check of the targets at start.
  ADD COLUMN allow_fan_out       boolean     NOT NULL DEFAULT false,
  -- "Only the newest per entity": the older versions to resolve as superseded when the job starts (an immediate job
  -- resolves them when it is created; a waiting one changes no message before it starts).
  ADD COLUMN superseded_ids      bigint[]    NOT NULL DEFAULT '{}';

-- The start step and the expiry look for these few jobs only.
CREATE INDEX replay_jobs_waiting_idx ON replay_jobs (id) WHERE status IN ('awaiting_approval', 'scheduled');

-- A critical source: replays of its messages need approval when the admin's policy says so.
ALTER TABLE sources ADD COLUMN critical boolean NOT NULL DEFAULT false;

-- The approval policy (one row, id 1, absent until an admin saves it: then nothing needs approval).
CREATE TABLE replay_approval_settings (
  id                 int         PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  -- Replays publishing more than this many messages need approval; NULL: no size rule.
  above_messages     int,
  edited_messages    boolean     NOT NULL DEFAULT false,
  custom_target      boolean     NOT NULL DEFAULT false,
  critical_sources   boolean     NOT NULL DEFAULT false,
  -- How long a job waits for approval; NULL: LAZARUS_REPLAY_APPROVAL_TTL_H (default 24 h).
  ttl_seconds        int,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  updated_by         text
);
