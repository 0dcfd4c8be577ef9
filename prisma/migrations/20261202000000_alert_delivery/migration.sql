-- Alert webhooks are delivered at least once (issue 5). An event that notifies waits for delivery until every enabled
-- webhook accepted it (2xx), retried with backoff for an hour; a crash between recording an event and sending it, or
-- a receiver that is down for a minute, no longer loses the alert.
ALTER TABLE alert_events ADD COLUMN delivery_attempts integer NOT NULL DEFAULT 0;
ALTER TABLE alert_events ADD COLUMN next_delivery_at timestamptz;
CREATE INDEX alert_events_delivery_idx ON alert_events (next_delivery_at, id) WHERE next_delivery_at IS NOT NULL;
