#!/usr/bin/env bash
# Starts the production build against a fresh database for the browser tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
PORT=${1:-3100}
DB=${E2E_DB:-lazarus_e2e}
ADMIN=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
psql "$ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null
export DATABASE_URL="${ADMIN%/*}/$DB"
export LAZARUS_SOURCES=${E2E_SOURCES:-e2e.dlq}
export LAZARUS_MIGRATIONS_DIR="$PWD/prisma/migrations"
# Alert rules are evaluated every 2 s (30 s by default), so the alert spec sees a breach within seconds.
export LAZARUS_ALERT_INTERVAL_S=${E2E_ALERT_INTERVAL_S:-2}
# The topology doctor runs only when a spec clicks Run now: vhost / holds every other test's queues, and a run every
# minute would read them all while unrelated specs run.
export LAZARUS_TOPOLOGY_INTERVAL_S=${E2E_TOPOLOGY_INTERVAL_S:-0}
# The alert spec's webhook receiver listens on 127.0.0.1; loopback is refused to webhooks unless allow-listed.
export LAZARUS_WEBHOOK_ALLOWED_HOSTS=${E2E_WEBHOOK_ALLOWED_HOSTS:-127.0.0.1}
# Sign-in: the first admin (the setup spec signs in with it) and a provisioning token the specs' API calls use.
export LAZARUS_ADMIN_EMAIL=${E2E_ADMIN_EMAIL:-e2e-admin@lazarus.test}
export LAZARUS_ADMIN_PASSWORD=${E2E_ADMIN_PASSWORD:-e2e-admin-password-not-secret}
export LAZARUS_ADMIN_TOKEN=${E2E_ADMIN_TOKEN:-lazarus-e2e-admin-token-0123456789abcdef}
# JetStream capture (docs/jetstream.md) starts once a spec adds a JetStream source; each server reads advisories with a
# consumer of its own, so two servers never take each other's (the jetstream spec removes the stream at its end).
export LAZARUS_NATS_URL=${E2E_NATS_URL:-nats://127.0.0.1:4222}
export LAZARUS_NATS_ADVISORY_STREAM=${E2E_NATS_ADVISORY_STREAM:-LZE2E_ADVISORIES}
export LAZARUS_NATS_CONSUMER=lazarus-e2e-$PORT
# The server runs in a zone no browser of the specs uses, so a page rendering a time in the server's zone fails to hydrate.
export TZ=${E2E_SERVER_TZ:-Asia/Kathmandu}
export PORT HOSTNAME=127.0.0.1
# The production build behind Lazarus' HTTP front, as `npm start` runs it (never Next's bare server.js).
exec node --max-semi-space-size=8 .next/standalone/dist/serve.mjs
