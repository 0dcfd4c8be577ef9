-- Saved views (issue 16): a name and a message-list query string, kept per user and listed in the message filters.
-- The query is the URL's own (`status=dead&h.tenant=acme`), checked by the API when saved and read by the browser
-- like any shared link, so a view never holds more than a link would. Deleted with its user.
CREATE TABLE saved_views (
  id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  user_id    bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name       text        NOT NULL,
  query      text        NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT saved_views_user_name_key UNIQUE (user_id, name)
);
