-- Header and property equality through the search index (issue 16, "Search by any header";
-- docs/decisions/0013-header-terms-in-the-search-index.md). `h.tenant=acme` and `p.correlationId=…` used to parse
-- the json headers of every row the other filters left: a rare value read the whole table. The background search
-- indexer now also stores, per message, one term per header value and per filterable property value, and a GIN
-- index finds a value's messages. The drainer is untouched: it already writes each batch's id range to
-- search_backlog, and rows still there are evaluated directly (lib/server/selection/message-filter-sql.ts).

-- One equality term: h (header) or p (property), the name, then the value. The name carries its length, so a name
-- holding '=', ':' or '#' cannot run into its value (names past 255 characters, which AMQP does not allow anyway, are
-- hashed). A value of up to 64 characters is kept as it is, after '='; a longer one as '#' and the first 16 hex digits
-- of its md5, so no term outgrows a GIN entry and the index stays small. A hashed term may be shared by two values;
-- the filter re-checks the stored value, so that only costs a row read. Changing this means a new function, a new
-- migration and a re-index (insert the id ranges into search_backlog).
CREATE FUNCTION dead_letter_term(kind text, name text, value text)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT kind || ':' ||
    CASE WHEN length(name) <= 255 THEN length(name) || ':' || name ELSE '#' || md5(name) END ||
    CASE WHEN length(value) <= 64 THEN '=' || value ELSE '#' || left(md5(value), 16) END
$$;

-- A message's terms: every header whose typed value has a text (`v` as text: a long's digits, a string as it is,
-- a table or an array as its JSON; a value kept only as bytes has none), exactly what the filter `h.<name>=<value>`
-- compares; and the properties the filter `p.<name>=<value>` takes (FILTER_PROPERTIES, lib/shared/schemas/field-filter.ts).
CREATE FUNCTION dead_letter_terms_v1(headers json, properties jsonb)
RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(array_agg(DISTINCT term), '{}') FROM (
    SELECT dead_letter_term('h', h.key, h.value ->> 'v') AS term
    FROM json_each(CASE WHEN json_typeof(headers) = 'object' THEN headers END) AS h
    UNION ALL
    SELECT dead_letter_term('p', p.name, properties ->> p.name)
    FROM unnest(ARRAY['messageId', 'correlationId', 'type', 'appId', 'userId']) AS p(name)
  ) terms WHERE term IS NOT NULL
$$;

ALTER TABLE dead_letter_search ADD COLUMN terms text[] NOT NULL DEFAULT '{}';
CREATE INDEX dead_letter_search_terms_idx ON dead_letter_search USING gin (terms);

-- Every stored message is indexed again (its text as before, now with its terms), by the background indexer, a
-- thousand ids at a time; until then, filters and searches evaluate its rows directly.
INSERT INTO search_backlog (first_id, last_id)
SELECT g, g + 999 FROM generate_series((SELECT min(id) FROM dead_letters), (SELECT max(id) FROM dead_letters), 1000) AS g;
