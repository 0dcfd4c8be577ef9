-- JetStream sources (docs/jetstream.md): a stream and, optionally, one of its consumers, whose failure advisories
-- Lazarus captures. Such a source keeps `vhost` empty (RabbitMQ has no empty vhost) and its name, `stream/consumer`
-- or `stream/*`, in `queue`, so the unique key, every list and the source-pattern scopes treat it like a queue.
-- Only added: a previous release's processes read kind 'dlq' and 'hold' and drain nothing else.
ALTER TABLE sources DROP CONSTRAINT IF EXISTS sources_kind_check;
ALTER TABLE sources ADD CONSTRAINT sources_kind_check CHECK (kind IN ('dlq', 'hold', 'jetstream'));
ALTER TABLE sources ADD COLUMN stream text;
ALTER TABLE sources ADD COLUMN consumer text;
ALTER TABLE sources ADD CONSTRAINT sources_jetstream_check
  CHECK ((kind = 'jetstream') = (stream IS NOT NULL) AND (consumer IS NULL OR kind = 'jetstream'));
