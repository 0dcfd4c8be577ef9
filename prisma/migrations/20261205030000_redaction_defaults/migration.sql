-- Redaction defaults, second round (security issue): secret keys the first set missed (passphrases, PINs, session ids,
-- short password keys as in pass=… and pw=…) and the service-token detector (Stripe, Slack, AWS, GitHub and Google
-- keys, Slack webhook URLs). They are added to existing rule sets too, after the rules already stored: an upgrade
-- should close these gaps without an operator having to notice them. A rule already there under any spelling
-- (`Pin`, `session_id`), enabled or not, is left as it is, so no operator's choice is overridden and the set never
-- holds two spellings of one key (PUT refuses those).

INSERT INTO redaction_rules (kind, value, description, position, updated_by)
SELECT r.kind, r.value, r.description, (SELECT coalesce(max(position), 0) FROM redaction_rules) + r.n, 'lazarus'
FROM (VALUES
  (1, 'key', '*passphrase*', 'Key passphrases'),
  (2, 'key', '*passcode*', NULL),
  (3, 'key', 'pass', 'pass=… in connection strings and query strings'),
  (4, 'key', 'pw', NULL),
  (5, 'key', 'pin', 'PINs'),
  (6, 'key', '*pincode*', NULL),
  (7, 'key', 'session', 'Session ids grant what a password grants'),
  (8, 'key', '*sessionid*', 'sessionId, x-session-id, JSESSIONID'),
  (9, 'key', '*sessionkey*', NULL),
  (10, 'key', '*privkey*', 'Private keys (privKey, priv_key)'),
  (11, 'detector', 'service-token', 'Stripe, Slack, AWS, GitHub and Google keys; Slack webhook URLs')
) AS r(n, kind, value, description)
WHERE NOT EXISTS (
  SELECT 1 FROM redaction_rules x
  WHERE x.kind = r.kind AND lower(regexp_replace(x.value, '[-_.[:space:]]+', '', 'g')) = lower(regexp_replace(r.value, '[-_.[:space:]]+', '', 'g'))
)
ORDER BY r.n;
