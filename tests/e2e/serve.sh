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
export PORT HOSTNAME=127.0.0.1
exec node .next/standalone/server.js
