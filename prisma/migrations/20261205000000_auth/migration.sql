-- Sign-in, roles and API tokens (docs/security.md). Hand-written: Prisma's migrate engine cannot run on our machines.

-- A person who can sign in: a local account (password_hash set), an OpenID Connect account (oidc_issuer +
-- oidc_subject) or a user an authenticating proxy vouched for (auth_source 'proxy'). The e-mail address is the
-- name the audit log shows.
CREATE TABLE users (
  id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  email             text        NOT NULL,
  display_name      text,
  auth_source       text        NOT NULL CHECK (auth_source IN ('local', 'oidc', 'proxy')),
  -- argon2id (PHC string); null for accounts that sign in elsewhere, or a local account invited but not set up yet.
  password_hash     text,
  oidc_issuer       text,
  oidc_subject      text,
  disabled_at       timestamptz,
  last_sign_in_at   timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT users_oidc_key UNIQUE (oidc_issuer, oidc_subject)
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

-- What a user may do. source_pattern limits a binding to the sources whose queue matches it (`billing.*`);
-- null means every source. Bindings with origin 'group' are recomputed from the identity provider's groups at
-- each sign-in (OpenID Connect) or request (proxy); 'manual' ones are set by an admin.
CREATE TABLE role_bindings (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  user_id         bigint      NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role            text        NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
  source_pattern  text,
  origin          text        NOT NULL CHECK (origin IN ('manual', 'group')),
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX role_bindings_user_idx ON role_bindings (user_id);
CREATE UNIQUE INDEX role_bindings_unique_idx ON role_bindings (user_id, role, coalesce(source_pattern, ''), origin);

-- Browser sessions. The cookie holds 32 random bytes; only their SHA-256 is stored, so a copy of this table signs
-- nobody in. A session ends at expires_at (absolute), after the idle limit without a request (last_seen_at is
-- written at most once a minute), or when revoked.
CREATE TABLE sessions (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  token_hash    bytea       NOT NULL,
  user_id       bigint      NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  method        text        NOT NULL CHECK (method IN ('local', 'oidc')),
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  revoked_at    timestamptz,
  ip            text,
  user_agent    text,
  CONSTRAINT sessions_token_hash_key UNIQUE (token_hash)
);
CREATE INDEX sessions_user_idx ON sessions (user_id, created_at DESC);

-- API tokens for scripts, CI and pause guards: 32 random bytes shown once, stored as SHA-256. A token acts with
-- `role` (never above its creator's, checked at every use) limited to `source_pattern`, or, with a scope, can do
-- only that: 'metrics' reads /api/metrics, 'guard' reads the pauses of guard_vhost/guard_queue.
CREATE TABLE api_tokens (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name            text        NOT NULL,
  token_hash      bytea       NOT NULL,
  user_id         bigint      NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role            text        CHECK (role IN ('viewer', 'operator', 'admin')),
  source_pattern  text,
  scope           text        CHECK (scope IN ('metrics', 'guard')),
  guard_vhost     text,
  guard_queue     text,
  expires_at      timestamptz,
  last_used_at    timestamptz,
  revoked_at      timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT api_tokens_token_hash_key UNIQUE (token_hash),
  CONSTRAINT api_tokens_role_or_scope CHECK ((role IS NULL) <> (scope IS NULL)),
  CONSTRAINT api_tokens_guard_queue CHECK ((scope = 'guard') = (guard_queue IS NOT NULL))
);
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id, created_at DESC);

-- One-time links: the first-run setup link (user_id null: creates the first admin) and the link an invited local
-- user sets a password with. Only the SHA-256 of the token is kept.
CREATE TABLE one_time_links (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  token_hash  bytea       NOT NULL,
  purpose     text        NOT NULL CHECK (purpose IN ('setup', 'set-password')),
  user_id     bigint      REFERENCES users(id) ON DELETE CASCADE,
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz,
  created_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT one_time_links_token_hash_key UNIQUE (token_hash)
);

-- Password sign-in attempts, for the brute-force limit per account and per address across every web process.
CREATE TABLE sign_in_attempts (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at         timestamptz NOT NULL DEFAULT now(),
  email      text        NOT NULL,
  ip         text        NOT NULL,
  succeeded  boolean     NOT NULL
);
CREATE INDEX sign_in_attempts_email_idx ON sign_in_attempts (lower(email), at DESC);
CREATE INDEX sign_in_attempts_ip_idx ON sign_in_attempts (ip, at DESC);

-- An OpenID Connect sign-in between the redirect to the provider and its callback: state, nonce and the PKCE
-- verifier, looked up by the state the provider sends back. A flow lives ten minutes and is used once, and only by
-- the browser that started it (browser_hash: the SHA-256 of a cookie set at the start), so a callback link sent to
-- someone else cannot sign them in as the sender.
CREATE TABLE oidc_flows (
  state          text        PRIMARY KEY,
  browser_hash   bytea       NOT NULL,
  nonce          text        NOT NULL,
  code_verifier  text        NOT NULL,
  return_to      text        NOT NULL,
  expires_at     timestamptz NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);

-- The sources a replay job's messages came from, so a user whose role is limited to some sources sees only the jobs
-- that touch nothing else (set when the job is created; release jobs keep null: only unlimited users see them).
ALTER TABLE replay_jobs ADD COLUMN source_ids bigint[];
UPDATE replay_jobs j SET source_ids = (
  SELECT array_agg(DISTINCT d.source_id ORDER BY d.source_id) FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id WHERE i.job_id = j.id
) WHERE j.kind = 'replay';
