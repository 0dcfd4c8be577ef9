-- The API request that wrote an audit entry: the id of its X-Request-Id response header and of its log lines
-- (lib/server/http/request-context.ts), so an entry leads to what was logged while it was written. Null for entries
-- written by engines (a replay job finishing, say) and for entries older than this migration. Nullable, without a
-- default or an index: adding it rewrites nothing, and code that does not know it (an older process during an
-- upgrade) keeps inserting.
ALTER TABLE audit_log ADD COLUMN request_id text;
