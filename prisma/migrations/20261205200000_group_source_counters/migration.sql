-- Group counters and arrival buckets per (error group, source). A role binding may limit a user to the sources whose
-- queue matches a pattern, and a group can span sources: error_groups' counters and group_arrivals' buckets cannot
-- answer such a user, and counting dead_letters per request is far too slow at a million rows (product.md §11). The
-- drainer, replay, resolve and retention keep these rows in the same transactions as the per-group ones.
--
-- The per-group rows stay: unrestricted reads keep their SQL, and summing per-source rows instead would read a row per
-- source and minute (the largest group's 30-day series, spread over 3 sources: 9-10 ms from group_arrivals, 26-30 ms
-- summed per source, in buckets shaped like bench:api's 1,000,000 messages). Writing both costs the drainer two more
-- upserts in the statement it already sends, of the few rows a batch touches (a batch comes from one source, so its
-- per-source rows are its per-group rows): that statement went from 0.77 to 0.94-1.01 ms for 500-row batches over 3
-- groups and 2 minutes, beside 55-61 ms for the whole batch.
--
-- Lock order: these rows are written only by a transaction holding the FOR UPDATE lock of their error_groups row,
-- taken in id order first (lib/server/ingest/store-batch.ts, replay/job-store.ts, retention/run-retention.ts), so they
-- add no deadlock the group rows did not already rule out.
--
-- source_id carries no foreign key, as in dead_letters: every batch updates its sources row, and a per-row RI check
-- would take a share lock on it from each concurrent batch. A source can be deleted only once it stores nothing;
-- lib/server/sources/delete-source.ts removes its rows here.

-- What GET /api/groups shows of a group, per source: counts, first/last failure and the facet values. replayed_count
-- and resolved_count follow message status; count, like error_groups.count, is what is stored (retention lowers it).
CREATE TABLE group_source_stats (
  group_id         bigint      NOT NULL REFERENCES error_groups(id) ON DELETE CASCADE,
  source_id        bigint      NOT NULL,
  count            bigint      NOT NULL DEFAULT 0,
  replayed_count   bigint      NOT NULL DEFAULT 0,
  resolved_count   bigint      NOT NULL DEFAULT 0,
  first_seen       timestamptz NOT NULL,
  last_seen        timestamptz NOT NULL,
  services         text[]      NOT NULL DEFAULT '{}',
  service_versions text[]      NOT NULL DEFAULT '{}',
  failure_kinds    text[]      NOT NULL DEFAULT '{}',
  CONSTRAINT group_source_stats_pkey PRIMARY KEY (group_id, source_id)
);
-- A restricted user's groups (GET /api/groups, /api/summary): the rows of their sources. Only a new (group, source)
-- pair writes this index; counter updates touch no indexed column and stay HOT.
CREATE INDEX group_source_stats_source_idx ON group_source_stats (source_id, group_id);

-- Arrivals per group, source and minute. Source before minute: a restricted read is one index-only range per (group,
-- allowed source), reading no other source's buckets (the largest group's 30-day series for one of its 3 sources, in
-- the same buckets: 264 buffers keyed this way, 784 with minute before source).
CREATE TABLE group_source_arrivals (
  group_id  bigint      NOT NULL REFERENCES error_groups(id) ON DELETE CASCADE,
  source_id bigint      NOT NULL,
  minute    timestamptz NOT NULL,
  count     integer     NOT NULL,
  CONSTRAINT group_source_arrivals_pkey PRIMARY KEY (group_id, source_id, minute) INCLUDE (count)
);

-- Backfill from what is stored. Replayed and resolved are final statuses, so counting them is what the counters would
-- have reached. Buckets of messages retention deleted before this migration are not recoverable per source; retention
-- only deletes messages whose status changed LAZARUS_RETENTION_DAYS ago, which failed before that, outside the 30 days
-- any read looks back (with the default 30 days).
INSERT INTO group_source_stats (group_id, source_id, count, replayed_count, resolved_count, first_seen, last_seen,
  services, service_versions, failure_kinds)
SELECT d.group_id, d.source_id, count(*),
  count(*) FILTER (WHERE st.status = 'replayed'),
  count(*) FILTER (WHERE st.status = 'resolved'),
  min(d.failed_at), max(d.failed_at),
  coalesce(array_agg(DISTINCT d.service ORDER BY d.service) FILTER (WHERE d.service IS NOT NULL), '{}'),
  coalesce(array_agg(DISTINCT d.service_version ORDER BY d.service_version) FILTER (WHERE d.service_version IS NOT NULL), '{}'),
  array_agg(DISTINCT d.failure_kind ORDER BY d.failure_kind)
FROM dead_letters d LEFT JOIN dead_letter_states st ON st.dead_letter_id = d.id
GROUP BY d.group_id, d.source_id;

INSERT INTO group_source_arrivals (group_id, source_id, minute, count)
SELECT group_id, source_id, date_trunc('minute', failed_at), count(*)
FROM dead_letters GROUP BY 1, 2, 3;

ANALYZE group_source_stats;
ANALYZE group_source_arrivals;
