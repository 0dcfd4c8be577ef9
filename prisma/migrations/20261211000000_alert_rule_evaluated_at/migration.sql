-- When the evaluator last compared each enabled rule with the rates: the alerts page shows it ("checked 12 s ago"), so
-- an evaluator that stopped (no process runs the engines, or its database calls fail) is seen, not assumed.
ALTER TABLE alert_rules ADD COLUMN evaluated_at timestamptz;
