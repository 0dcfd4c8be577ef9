-- Old must not overwrite new (issue 18; docs/ARCHITECTURE.md#entity-versions).
--
-- sources.entity_version: where a message's entity version lives ({kind, name|pointer, type: number|time}), like the
-- entity-key rule. Null: the source has none.
ALTER TABLE sources ADD COLUMN entity_version jsonb;

-- dead_letters.entity_version: the version the source's rule found at ingest (a number, or an ISO time as epoch
-- milliseconds); null when the source has no rule, the message has no value, or it did not parse (flagged
-- entity-version-unparsable). Nullable without a default: adding it rewrites nothing. No index of its own: the plan
-- reads versions of the selection's entities through dead_letters_entity_idx.
ALTER TABLE dead_letters ADD COLUMN entity_version double precision;

-- A guard dropped this item's published copy: it had let a higher version of the entity through before
-- (POST /api/guard/superseded). The item keeps its outcome (the broker confirmed it); these say what became of it.
ALTER TABLE replay_items
  ADD COLUMN superseded_by_version double precision,
  ADD COLUMN superseded_note text,
  ADD COLUMN superseded_at timestamptz;
