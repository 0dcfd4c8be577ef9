-- Paging and chat (docs/ARCHITECTURE.md#alerts). Only added, with defaults: a previous release's evaluator keeps
-- working during a rolling update (its webhooks read as `generic`, it never writes `resolved`).

-- Each webhook's payload format; PagerDuty's needs the Events API v2 routing key (a secret: the API shows its last
-- four characters only).
ALTER TABLE alert_webhooks ADD COLUMN format text NOT NULL DEFAULT 'generic' CHECK (format IN ('generic', 'slack', 'teams', 'pagerduty'));
ALTER TABLE alert_webhooks ADD COLUMN routing_key text;
ALTER TABLE alert_webhooks ADD CONSTRAINT alert_webhooks_routing_key_check CHECK ((format = 'pagerduty') = (routing_key IS NOT NULL));

-- A rule's incident: opened by a notified firing, closed (once, by the evaluation that records the `resolved` event)
-- when the rule has had nothing in breach and nothing new for its window. last_fired_at: its latest firing event.
ALTER TABLE alert_rules ADD COLUMN incident_opened_at timestamptz;
ALTER TABLE alert_rules ADD COLUMN last_fired_at timestamptz;

ALTER TABLE alert_events DROP CONSTRAINT alert_events_state_check;
ALTER TABLE alert_events ADD CONSTRAINT alert_events_state_check CHECK (state IN ('firing', 'recovered', 'resolved'));

-- The per-webhook rate cap (LAZARUS_WEBHOOK_MAX_PER_MINUTE): POSTs made to each webhook per clock minute, counted
-- across processes. Rows older than an hour are removed by the delivery that adds new ones.
CREATE TABLE alert_webhook_sends (
  webhook_id bigint      NOT NULL REFERENCES alert_webhooks(id) ON DELETE CASCADE,
  minute     timestamptz NOT NULL,
  posts      integer     NOT NULL,
  PRIMARY KEY (webhook_id, minute)
);
