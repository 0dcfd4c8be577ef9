-- Traces (docs/ARCHITECTURE.md#traces): the trace and span a message belongs to, read at ingest from its W3C
-- traceparent, B3 or uber-trace-id header (lib/server/traces/trace-context.ts). Rows stored before stay NULL: their ids
-- are read from their headers when shown, not by rewriting every row here.
ALTER TABLE dead_letters ADD COLUMN trace_id text, ADD COLUMN span_id text;

-- The traceId filter (an exact trace id); most messages carry none, so only those that do are indexed.
CREATE INDEX dead_letters_trace_idx ON dead_letters (trace_id, failed_at DESC, id DESC) WHERE trace_id IS NOT NULL;

-- A replay told to start a new trace (POST /api/replays {newTrace: true}): frozen on the job, applied by the executor.
-- Only added, with a default: a previous release's executor never reads it.
ALTER TABLE replay_jobs ADD COLUMN new_trace boolean NOT NULL DEFAULT false;

-- The link template for "Open trace" an admin sets in Settings, with {traceId} and {spanId}; it wins over
-- LAZARUS_TRACE_URL_TEMPLATE. One row, absent until first saved; a NULL template falls back to the environment.
CREATE TABLE trace_settings (
  id           integer     PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  url_template text,
  updated_at   timestamptz NOT NULL DEFAULT now(),
  updated_by   text
);
