-- Webhook allow-list (security issue). Webhooks are refused when their host is, or resolves to, a loopback, private,
-- link-local, metadata or otherwise non-public address, at save time and again on every connection. An admin may
-- allow specific hosts (a name: whatever it resolves to), addresses or CIDR ranges that would otherwise be refused,
-- e.g. an internal Mattermost at 10.1.2.3. Entries are stored canonical (lower-case names, four-part decimal IPv4,
-- compressed IPv6, CIDRs at their network address); LAZARUS_WEBHOOK_ALLOWED_HOSTS adds more from the environment.
-- One row: the list is replaced as a whole, like the redaction rules.
CREATE TABLE webhook_settings (
  id            integer     PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  allowed_hosts text[]      NOT NULL DEFAULT '{}',
  updated_at    timestamptz NOT NULL DEFAULT now(),
  updated_by    text
);
