-- When a process last took a vhost's scheduled topology run: the doctor of every process claims a vhost before
-- reading the broker, and only one claim succeeds per interval, so the fleet reads each vhost once per interval
-- (lib/server/engines/topology-doctor/). Only added: a previous release's processes ignore it.
ALTER TABLE topology_runs ADD COLUMN claimed_at timestamptz;
