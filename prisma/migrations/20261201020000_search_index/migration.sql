-- Text search moves off the ingestion path (issues 2 and 3). Keeping the trigram index on dead_letters cost the
-- drainer about a third of its rate, and made any deeper body search unaffordable. Now the drainer only records
-- which id range each stored batch covers (search_backlog, one row per batch); a background indexer turns ranges
-- into rows of dead_letter_search, whose trigram index answers `q`. Rows not indexed yet stay searchable: a search
-- evaluates the same text directly on the rows of the backlog's ranges (lib/server/messages/message-filter-sql.ts).

DROP INDEX dead_letters_search_trgm_idx;

-- What `q` finds: the error type, the first 512 characters of the error message, the entity key and the first 512
-- of the body's text view. Deeper than the inline index's 128 could afford; still bounded, because trigram upkeep
-- grows with each row's distinct trigrams (~0.16 ms a row for ~400 characters, ~1.7 ms for 2 KiB). Changing it
-- means a new function, a new migration and a re-index (insert the id ranges into search_backlog).
CREATE FUNCTION dead_letter_search_text_v2(error_type text, error_message text, entity_key text, body_preview text)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(error_type, '') || E'\n' || coalesce(left(error_message, 512), '') || E'\n' ||
    coalesce(entity_key, '') || E'\n' || coalesce(left(body_preview, 512), '')
$$;

CREATE TABLE dead_letter_search (
  dead_letter_id bigint PRIMARY KEY,
  text           text   NOT NULL
);
CREATE INDEX dead_letter_search_trgm_idx ON dead_letter_search USING gin (text gin_trgm_ops);

-- Id ranges stored but not yet indexed. Written in the same transaction as the rows, so a range is visible exactly
-- when its rows are (identity values commit out of order, so a high-water mark could skip rows).
CREATE TABLE search_backlog (
  id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  first_id bigint NOT NULL,
  last_id  bigint NOT NULL,
  CHECK (first_id <= last_id)
);

-- Whatever is stored already gets indexed by the background indexer, a thousand ids at a time.
INSERT INTO search_backlog (first_id, last_id)
SELECT g, g + 999 FROM generate_series((SELECT min(id) FROM dead_letters), (SELECT max(id) FROM dead_letters), 1000) AS g;
