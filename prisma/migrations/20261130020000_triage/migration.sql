-- Triage read side (issue 3): indexes for the filters and the text search of GET /api/messages, for a group's
-- breakdown, and for the arrival buckets the dashboard's sparklines and summary read. The drainer pays for every
-- index on each insert, so each one here exists for a named query; combined filters use the most selective index
-- and check the rest on its rows.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- What `q` searches (lib/server/messages/message-filter-sql.ts), as one short text so one trigram index serves it:
-- the error type, the start of the error message, the entity key and the start of the body's text view (where
-- JSON bodies keep their ids). Trigram upkeep is paid per distinct trigram of each inserted row, and it is by far
-- the dearest index here: with 2 KiB of the body preview indexed, storing 1 KiB JSON messages ran ~10x slower
-- (~1.7 ms a row); with 256 characters of error message and 128 of body it adds ~0.16 ms a row, about what the
-- rest of storing a row costs (the error fields alone: ~0.03 ms). Terms beyond these prefixes are not found.
-- The function is inlined by the planner, so queries and the index expression match; changing it means a new
-- function and index in a new migration.
CREATE FUNCTION dead_letter_search_text(error_type text, error_message text, entity_key text, body_preview text)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(error_type, '') || E'\n' || coalesce(left(error_message, 256), '') || E'\n' ||
    coalesce(entity_key, '') || E'\n' || coalesce(left(body_preview, 128), '')
$$;

-- `q`: ILIKE '%term%' through trigrams, so a rare term answers from the index instead of a scan of every row.
CREATE INDEX dead_letters_search_trgm_idx ON dead_letters
  USING gin (dead_letter_search_text(error_type, error_message, entity_key, body_preview) gin_trgm_ops);

-- The equality filters of GET /api/messages. Each ends in the list's order (failed_at DESC, id DESC), so a first
-- page and a keyset page deep in the list are both a short index range scan with no sort, however rare the value.
-- `status` other than 'dead' (held, replaying, replayed, resolved): rare, and a walk along failed_at would pass
-- thousands of dead rows per match. Partial, so the drainer's 'dead' rows never enter it (the query repeats the
-- predicate); status = 'dead' is most rows, which failed_at order finds at once.
CREATE INDEX dead_letters_status_idx ON dead_letters (status, failed_at DESC, id DESC) WHERE status <> 'dead';
-- `failureKind`: a handful of values with a long tail (overflow, delivery-limit, expired).
CREATE INDEX dead_letters_failure_kind_idx ON dead_letters (failure_kind, failed_at DESC, id DESC);
-- `service`, alone or with `serviceVersion` (the version is then checked on the rows of that service, as it is on
-- a group's rows when the group detail links to one version). A version alone walks failed_at: no index of its own.
CREATE INDEX dead_letters_service_idx ON dead_letters (service, failed_at DESC, id DESC) WHERE service IS NOT NULL;
-- `entity`, and a message's sameEntity timeline (scanned backwards, oldest first). Partial: many sources set no
-- entity-key rule, and NULL keys are never looked up.
CREATE INDEX dead_letters_entity_idx ON dead_letters (entity_key, failed_at DESC, id DESC) WHERE entity_key IS NOT NULL;

-- The group filter's index again, now covering what a group's breakdown counts (GET /api/groups/{id}): the
-- GROUP BY over a group's most recent messages becomes an index-only scan instead of one heap visit per message
-- (at 1,000,000 rows, 200,000 messages of one group: ~0.15 s instead of ~2 s).
DROP INDEX dead_letters_group_idx;
CREATE INDEX dead_letters_group_idx ON dead_letters (group_id, failed_at DESC, id DESC)
  INCLUDE (source_id, failure_kind, service, service_version);

-- The arrival buckets' primary key again, now covering `count`: every read of group_arrivals (rates, the 24-hour
-- sparklines of GET /api/groups for all listed groups at once, a group's 30-day series, arrivalsLastHour of
-- GET /api/summary) becomes an index-only range scan per group, with no heap visit per minute bucket. Rather than
-- a second index on (minute): no extra index for the drainer to maintain, and the upsert it already does keeps
-- working against the same key (group_id, minute).
CREATE UNIQUE INDEX group_arrivals_covering_key ON group_arrivals (group_id, minute) INCLUDE (count);
ALTER TABLE group_arrivals
  DROP CONSTRAINT group_arrivals_pkey,
  ADD CONSTRAINT group_arrivals_pkey PRIMARY KEY USING INDEX group_arrivals_covering_key;
