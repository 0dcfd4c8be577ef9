-- Guard security (guard 2.0): heartbeats of the guards that poll GET /api/pauses, and held messages no pause explains.
-- Hand-written: Prisma's migrate engine cannot run on our machines.

-- One row per guard instance and the queue it protects. A guard's poll names its queue, vhost, instance id (host, pid,
-- random part) and GUARD_VERSION; the row is written at most once a minute per instance (an upsert whose WHERE skips
-- fresher rows), so the 30-second polls stay reads. guard_version is null for a poll that did not say.
CREATE TABLE guard_heartbeats (
  vhost          text        NOT NULL,
  queue          text        NOT NULL,
  instance       text        NOT NULL,
  guard_version  text,
  last_seen_at   timestamptz NOT NULL DEFAULT now(),
  first_seen_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (vhost, queue, instance)
);

-- A held message is released only to a queue that had a pause open (of its entity, or of the whole queue) within ten
-- minutes of its arrival; the drainer checks that as it writes each held row (lib/server/pauses/held-row.ts). Resumed
-- pauses are never deleted, so this is the lookup's index; pauses_active_key covers open pauses only.
CREATE INDEX pauses_vhost_queue_idx ON pauses (vhost, queue, entity_key);

-- Messages held before that rule are judged by it once, here: those no pause explains get the flag, stay held and are
-- never released automatically (the releases skip the flag). Rows a release is sending back already are left alone.
UPDATE dead_letters d SET flags = array_append(d.flags, 'held-unexpected')
FROM dead_letter_states st, sources s
WHERE st.dead_letter_id = d.id AND st.status = 'held' AND s.id = d.source_id AND s.kind = 'hold'
  AND d.held_from IS NOT NULL AND NOT ('held-unexpected' = ANY (d.flags))
  AND NOT EXISTS (
    SELECT 1 FROM pauses w WHERE w.vhost = s.vhost AND w.queue = d.held_from
      AND (w.entity_key IS NULL OR w.entity_key = d.entity_key)
      AND w.created_at <= d.failed_at + interval '10 minutes'
      AND (w.resumed_at IS NULL OR w.resumed_at >= d.failed_at - interval '10 minutes'));
