-- Body field filters (issue 28, "Body fields"; README, "Filtering by header, property or x-death";
-- docs/decisions/0013-header-terms-in-the-search-index.md). `b./order/customer=42` compares the scalar at an RFC 6901
-- pointer of a JSON body. The background search indexer now also writes, per message, one equality term per scalar
-- leaf of its JSON body (bounded below), beside the header and property terms, and the filter looks them up in the
-- same GIN index. The drainer is untouched.

-- A stored body as jsonb, or NULL when it is not one Lazarus reads as JSON: stored as `json` (the drainer parsed it,
-- lib/server/ingest/build-row.ts) and at most 4 MiB (MAX_PARSED_BODY_BYTES, lib/server/ingest/normalise/delivery-body.ts,
-- the most the drainer's rules parse). JavaScript takes some JSON PostgreSQL refuses (an escaped U+0000, a lone
-- surrogate, nesting deeper than the parser's stack): such a body is not JSON here either, rather than an error in a
-- filter or in the indexer. An exception block costs a subtransaction per call (without a transaction id: it writes
-- nothing), and PostgreSQL starts none in a parallel query: PARALLEL UNSAFE, so a statement that reads body fields
-- runs in one process (a parallel plan failed with "cannot start subtransactions during a parallel operation").
CREATE FUNCTION dead_letter_body_json(body bytea, encoding text, size integer)
RETURNS jsonb LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE AS $$
BEGIN
  IF encoding IS DISTINCT FROM 'json' OR size > 4194304 THEN
    RETURN NULL;
  END IF;
  RETURN convert_from(body, 'UTF8')::jsonb;
EXCEPTION WHEN OTHERS THEN
  RETURN NULL;
END
$$;

-- What a body field compares as: a string as it is, a number as PostgreSQL writes it (42, 4.50, 1e2 as 100), true,
-- false and null as those words; an object or an array has no text (it exists, it equals nothing).
CREATE FUNCTION dead_letter_json_text(value jsonb)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE jsonb_typeof(value) WHEN 'string' THEN value #>> '{}' WHEN 'object' THEN NULL WHEN 'array' THEN NULL ELSE value::text END
$$;

-- One body field's equality term: `b#` and 16 hex digits of the MD5 of the pointer's length, the pointer, `=` and the
-- value (the length keeps a pointer holding '=' from running into its value). Always hashed: a body has a score of
-- fields, most of them ids, times and amounts unique to the message, and a short fixed-size term kept the GIN index
-- an eighth smaller than readable terms (`b:15:/order/customer=42`) in bench:api, and costs less to compute. Two
-- fields sharing a hash only cost a row read: the filter checks the stored body.
CREATE FUNCTION dead_letter_body_term(pointer text, value text)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT 'b#' || left(md5(length(pointer) || ':' || pointer || '=' || value), 16)
$$;

-- A JSON body's equality terms: one per scalar leaf (its pointer and its text), at most 8 levels deep, the first 64
-- leaves (in jsonb's order). A body with more leaves within those levels also gets the term 'b:*' (no field's term can
-- be: theirs start `b#`), which a filter takes as "may hold any value" and checks on the stored body. Deeper pointers
-- are never looked up here (BODY_TERM_DEPTH, lib/server/selection/message-filter-sql.ts). Array elements are named by
-- their index.
CREATE FUNCTION dead_letter_body_terms_v1(doc jsonb)
RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  WITH RECURSIVE walk(pointer, value, depth) AS (
    SELECT ''::text, doc, 0 WHERE jsonb_typeof(doc) IN ('object', 'array')
    UNION ALL
    SELECT w.pointer || '/' || replace(replace(c.key, '~', '~0'), '/', '~1'), c.value, w.depth + 1
    FROM walk w CROSS JOIN LATERAL (
      SELECT o.key, o.value FROM jsonb_each(CASE WHEN jsonb_typeof(w.value) = 'object' THEN w.value END) o
      UNION ALL
      SELECT (a.n - 1)::text, a.value FROM jsonb_array_elements(CASE WHEN jsonb_typeof(w.value) = 'array' THEN w.value END) WITH ORDINALITY a(value, n)
    ) c
    WHERE w.depth < 8
  ), leaves AS (
    SELECT dead_letter_body_term(pointer, dead_letter_json_text(value)) AS term
    FROM walk WHERE depth > 0 AND jsonb_typeof(value) NOT IN ('object', 'array')
    LIMIT 65
  )
  SELECT coalesce(array_agg(term), '{}') FROM (
    SELECT term FROM (SELECT term, row_number() OVER () AS n FROM leaves) numbered WHERE n <= 64
    UNION ALL
    SELECT 'b:*' WHERE (SELECT count(*) FROM leaves) > 64
  ) terms
$$;

-- A message's terms: its header and property terms (dead_letter_terms_v1) and its JSON body's, none of which can equal
-- one of the others (`h:`, `p:`, `b#`, `b:*`). PARALLEL UNSAFE, as dead_letter_body_json.
CREATE FUNCTION dead_letter_terms_v2(headers json, properties jsonb, body bytea, body_encoding text, body_size integer)
RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL UNSAFE AS $$
  SELECT dead_letter_terms_v1(headers, properties) || coalesce(dead_letter_body_terms_v1(dead_letter_body_json(body, body_encoding, body_size)), '{}')
$$;

-- Every stored message is indexed again (its text as before, its terms now with its body's), by the background
-- indexer, a thousand ids at a time; until then, filters evaluate its rows directly.
INSERT INTO search_backlog (first_id, last_id)
SELECT g, g + 999 FROM generate_series((SELECT min(id) FROM dead_letters), (SELECT max(id) FROM dead_letters), 1000) AS g;
