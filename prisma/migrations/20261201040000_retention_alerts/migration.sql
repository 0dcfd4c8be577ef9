-- Retention and inflow alerts (issue 5).

-- Retention deletes replayed and resolved messages whose status changed long enough ago, oldest first, in small
-- batches. Partial: dead and held rows (most of the table, never deleted by retention) stay out of it.
CREATE INDEX dead_letters_retention_idx ON dead_letters (status_changed_at, id) WHERE status IN ('replayed', 'resolved');

CREATE TABLE retention_runs (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  started_at  timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  cutoff      timestamptz NOT NULL,
  deleted     bigint      NOT NULL DEFAULT 0,
  error       text
);

-- Inflow alert rules. 'source-rate' and 'group-rate' fire when arrivals per minute, averaged over window_minutes,
-- reach threshold_per_minute (source_id / group_id NULL: every source / every group); 'new-group' fires once per
-- error group that appears.
CREATE TABLE alert_rules (
  id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind                 text        NOT NULL CHECK (kind IN ('source-rate', 'group-rate', 'new-group')),
  source_id            bigint      REFERENCES sources(id) ON DELETE CASCADE,
  group_id             bigint      REFERENCES error_groups(id) ON DELETE CASCADE,
  threshold_per_minute numeric,
  window_minutes       integer     NOT NULL DEFAULT 5 CHECK (window_minutes BETWEEN 1 AND 1440),
  cooldown_minutes     integer     NOT NULL DEFAULT 30 CHECK (cooldown_minutes BETWEEN 0 AND 10080),
  enabled              boolean     NOT NULL DEFAULT true,
  created_by           text        NOT NULL,
  created_at           timestamptz NOT NULL DEFAULT now(),
  CHECK ((kind = 'new-group') = (threshold_per_minute IS NULL))
);

-- Where alerts go: each enabled webhook receives every notification (JSON with a Slack-compatible `text`).
CREATE TABLE alert_webhooks (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  url        text        NOT NULL,
  enabled    boolean     NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- One row per rule and subject (a source, a group): whether it is in breach, and when it last notified (cool-down).
CREATE TABLE alert_states (
  rule_id        bigint      NOT NULL REFERENCES alert_rules(id) ON DELETE CASCADE,
  subject_key    text        NOT NULL,
  firing         boolean     NOT NULL,
  since          timestamptz NOT NULL,
  last_notified  timestamptz,
  PRIMARY KEY (rule_id, subject_key)
);

-- The history: every breach (notified or suppressed by the cool-down) and every recovery.
CREATE TABLE alert_events (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  rule_id        bigint      REFERENCES alert_rules(id) ON DELETE SET NULL,
  kind           text        NOT NULL,
  state          text        NOT NULL CHECK (state IN ('firing', 'recovered')),
  subject_type   text        NOT NULL,
  subject_id     text,
  subject_label  text        NOT NULL,
  rate_per_minute numeric,
  threshold_per_minute numeric,
  text           text        NOT NULL,
  notified       boolean     NOT NULL,
  delivery       jsonb       NOT NULL DEFAULT '[]',
  at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX alert_events_at_idx ON alert_events (at DESC, id DESC);
CREATE INDEX alert_events_firing_idx ON alert_events (rule_id, subject_id, id DESC);

-- New groups are noticed by id: the highest group id already considered.
CREATE TABLE alert_cursor (
  id            integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  last_group_id bigint NOT NULL
);
INSERT INTO alert_cursor (last_group_id) SELECT coalesce(max(id), 0) FROM error_groups;
