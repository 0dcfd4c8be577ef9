#!/bin/sh
# Prisma's schema engine is a native binary downloaded from a CDN these machines cannot reach.
# `prisma generate` only needs this path to exist; every engine-backed command must fail loudly.
echo "prisma schema engine is unavailable here: migrations are plain SQL applied by lib/server/platform/db/migrate.ts" >&2
exit 1
