-- Redaction rules (issue 5): applied to every export (JSON Lines, CSV, Markdown) and every "Copy as ticket".
-- kind 'key': a key name, '*' matching any run of characters, compared case-insensitively with - _ . and spaces
--   ignored; the whole value under a matching key is replaced at any depth of bodies, properties and headers, and in
--   key=value / key: value / <key>…</key> text.
-- kind 'detector': a built-in value detector by name (lib/server/redaction/detectors.ts).
-- kind 'pattern': an operator's regular expression (JavaScript syntax, case-insensitive), checked for catastrophic
--   backtracking before it is stored.
-- The settings page replaces the whole set at once; updated_at/updated_by say who changed it last.

CREATE TABLE redaction_rules (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind        text        NOT NULL CHECK (kind IN ('key', 'detector', 'pattern')),
  value       text        NOT NULL CHECK (length(value) BETWEEN 1 AND 300),
  enabled     boolean     NOT NULL DEFAULT true,
  description text,
  position    integer     NOT NULL DEFAULT 0,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  updated_by  text,
  CONSTRAINT redaction_rules_kind_value_key UNIQUE (kind, value)
);

INSERT INTO redaction_rules (kind, value, description, position, updated_by) VALUES
  ('key', '*password*', 'Passwords under any key that mentions one', 1, 'lazarus'),
  ('key', '*passwd*', NULL, 2, 'lazarus'),
  ('key', 'pwd', NULL, 3, 'lazarus'),
  ('key', '*secret*', 'Client secrets, shared secrets', 4, 'lazarus'),
  ('key', '*token*', 'Access, refresh and API tokens', 5, 'lazarus'),
  ('key', '*apikey*', 'API keys (X-Api-Key, api_key, apiKey)', 6, 'lazarus'),
  ('key', '*accesskey*', NULL, 7, 'lazarus'),
  ('key', '*privatekey*', NULL, 8, 'lazarus'),
  ('key', '*credential*', NULL, 9, 'lazarus'),
  ('key', 'authorization', 'HTTP Authorization headers', 10, 'lazarus'),
  ('key', 'proxy-authorization', NULL, 11, 'lazarus'),
  ('key', '*cookie*', 'Cookie and Set-Cookie', 12, 'lazarus'),
  ('key', '*cardnumber*', 'Payment card numbers under a named field', 13, 'lazarus'),
  ('key', 'cvv', NULL, 14, 'lazarus'),
  ('key', 'cvc', NULL, 15, 'lazarus'),
  ('key', 'ssn', 'Social security numbers', 16, 'lazarus'),
  ('detector', 'email', NULL, 20, 'lazarus'),
  ('detector', 'card-number', NULL, 21, 'lazarus'),
  ('detector', 'jwt', NULL, 22, 'lazarus'),
  ('detector', 'bearer-token', NULL, 23, 'lazarus'),
  ('detector', 'url-password', NULL, 24, 'lazarus'),
  ('detector', 'private-key', NULL, 25, 'lazarus');
