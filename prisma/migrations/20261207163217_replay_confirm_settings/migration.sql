-- Large replays need the count typed to confirm (issue 16). A replay of at least large_job_messages messages starts
-- only when its request carries confirmCount equal to the number it will publish (lib/server/replay/create-replay.ts);
-- the UI asks for the number to be typed. One row, edited by admins in Settings; absent until first saved, and then
-- the default (100) applies.
CREATE TABLE replay_confirm_settings (
  id                 integer     PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  large_job_messages integer     NOT NULL DEFAULT 100 CHECK (large_job_messages >= 1),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  updated_by         text
);
