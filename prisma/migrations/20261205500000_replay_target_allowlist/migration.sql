-- Replay target allow-list (security issue). A custom replay target (an exchange and routing key the operator types)
-- must name an exchange matching one of these patterns ('*' matches any run of characters, e.g. 'orders.*',
-- 'billing.retry'); an empty list refuses custom targets. amq.* and Lazarus' own control and hold exchanges are
-- refused whatever the list says (lib/server/replay/target-policy.ts). LAZARUS_REPLAY_TARGET_PATTERNS adds more
-- patterns from the environment. One row: admins replace the list as a whole, like the webhook allow-list.
CREATE TABLE replay_target_settings (
  id                     integer     PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  custom_target_patterns text[]      NOT NULL DEFAULT '{}',
  updated_at             timestamptz NOT NULL DEFAULT now(),
  updated_by             text
);
