-- The topology doctor (docs/topology.md). Each run reads one vhost's definitions and stats through the management API,
-- diagnoses them with what Lazarus stores, and keeps here the graph it drew, what it checked, and its findings.

-- The last run of each vhost: the graph and the checks of the last successful read, and the last failure if the
-- newest run failed (the graph then stays the last good one, so the page still shows something true, and says how old).
CREATE TABLE topology_runs (
  vhost          text        PRIMARY KEY,
  checked_at     timestamptz,
  broker_version text,
  graph          json        NOT NULL DEFAULT '{"nodes":[],"edges":[]}',
  checks         json        NOT NULL DEFAULT '[]',
  error          text,
  failed_at      timestamptz
);

-- One row per trap and vhost. `key` names the trap (its kind and the objects it concerns), so a run that finds the
-- same trap again updates last_seen_at instead of adding a row; a run that no longer finds it sets resolved_at. A trap
-- that comes back after it was resolved opens again as new: first_seen_at, opened_seq and the acknowledgement start
-- over (the audit log keeps the earlier acknowledgement). opened_seq moves on every opening, so the alert evaluator
-- notices new findings by it the way it notices new groups by id.
CREATE SEQUENCE topology_findings_opened_seq;
CREATE TABLE topology_findings (
  id                  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  vhost               text        NOT NULL,
  key                 text        NOT NULL,
  kind                text        NOT NULL,
  severity            text        NOT NULL CHECK (severity IN ('error', 'warning', 'info')),
  -- title, why, fix, evidence, objects, cycle, messagesQuery: what the page shows, as the last run described it
  detail              json        NOT NULL,
  first_seen_at       timestamptz NOT NULL,
  last_seen_at        timestamptz NOT NULL,
  resolved_at         timestamptz,
  opened_seq          bigint      NOT NULL DEFAULT nextval('topology_findings_opened_seq'),
  acknowledged_at     timestamptz,
  acknowledged_by     text,
  acknowledge_reason  text,
  UNIQUE (vhost, key),
  CHECK ((acknowledged_at IS NULL) = (acknowledged_by IS NULL) AND (acknowledged_at IS NULL) = (acknowledge_reason IS NULL))
);
CREATE INDEX topology_findings_open_idx ON topology_findings (vhost, severity) WHERE resolved_at IS NULL;
CREATE INDEX topology_findings_opened_idx ON topology_findings (opened_seq);

-- Alert rules gain 'new-finding': fires once per finding the doctor opens at min_severity or worse.
ALTER TABLE alert_rules DROP CONSTRAINT alert_rules_kind_check;
ALTER TABLE alert_rules DROP CONSTRAINT alert_rules_check;
ALTER TABLE alert_rules ADD COLUMN min_severity text CHECK (min_severity IN ('error', 'warning', 'info'));
ALTER TABLE alert_rules ADD CONSTRAINT alert_rules_kind_check CHECK (kind IN ('source-rate', 'group-rate', 'new-group', 'new-finding'));
ALTER TABLE alert_rules ADD CONSTRAINT alert_rules_check CHECK ((kind IN ('new-group', 'new-finding')) = (threshold_per_minute IS NULL));
ALTER TABLE alert_rules ADD CONSTRAINT alert_rules_new_finding_check CHECK ((kind = 'new-finding') = (min_severity IS NOT NULL));
ALTER TABLE alert_cursor ADD COLUMN last_finding_seq bigint NOT NULL DEFAULT 0;
