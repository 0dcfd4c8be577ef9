# Lazarus' production image (docs/operations.md#the-container-image). One image, two commands:
#   web:     docker run … lazarus                      (the UI and API; drains and replays too unless LAZARUS_RUN_WORKERS=0)
#   worker:  docker run … lazarus dist/worker.mjs      (the drainer and replay executor alone; needs DATABASE_URL)
# Run it with a read-only root file system: the process writes only to the data volume (the embedded database, when
# DATABASE_URL is unset). tests/artifact/container-image.test.ts runs this file's runtime steps against the build.

# The Node version CI tests with (the test above checks the two agree).
FROM node:20.20.2-bookworm-slim AS build
WORKDIR /app
ENV NEXT_TELEMETRY_DISABLED=1
# The lockfile alone decides what is installed; nothing is downloaded at run time.
COPY package.json package-lock.json ./
COPY packages/guard/package.json packages/guard/
COPY prisma prisma
COPY prisma.config.ts ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

FROM node:20.20.2-bookworm-slim
WORKDIR /app
# MALLOC_ARENA_MAX=2: glibc's per-thread malloc arenas cost a draining worker about 70 MiB of its peak RSS for about 5 %
# of its CPU per message (docs/performance.md#memory).
ENV NODE_ENV=production \
    HOSTNAME=0.0.0.0 \
    PORT=3000 \
    LAZARUS_DATA_DIR=/data \
    MALLOC_ARENA_MAX=2
# Next's standalone output, made complete by `npm run build` (static assets, migrations, dist/*.mjs): owned by root,
# so the process cannot change its own code.
COPY --from=build /app/.next/standalone ./
RUN mkdir /data && chown node:node /data
VOLUME /data
USER node
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s CMD ["node", "dist/healthcheck.mjs"]
# No shell between the container and Node: SIGTERM reaches Lazarus, which drains in-flight work and exits.
ENTRYPOINT ["node", "--max-semi-space-size=8"]
CMD ["dist/serve.mjs"]
