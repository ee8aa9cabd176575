# syntax=docker/dockerfile:1
# Postbox: one Node.js process, one SQLite file.
#   docker build -t postbox .
#   docker run -p 8080:8080 -v postbox-data:/data postbox
# The first admin key is written to /data/admin-key.txt unless POSTBOX_ADMIN_KEY is set.
# Both stages use the same base image, so the better-sqlite3 binary compiled (or fetched) in the
# build stage matches the runtime's Node ABI and glibc.

FROM node:20-bookworm-slim AS build
WORKDIR /app
# Toolchain for better-sqlite3's native addon when no prebuilt binary matches.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# Install without the prepare build (the sources are not copied yet); the addon still builds.
RUN npm ci --ignore-scripts && npm rebuild better-sqlite3
COPY tsconfig.json tsconfig.build.json schema.sql ./
COPY src ./src
COPY sdk ./sdk
COPY scripts ./scripts
COPY web ./web
# dist/src, dist/web (console and portal) and the SDK, then only what runs.
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    POSTBOX_HOST=0.0.0.0 \
    POSTBOX_DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json /app/schema.sql ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The image's files stay root-owned and read-only to the service; only /data is writable.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.POSTBOX_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains in-flight deliveries within POSTBOX_SHUTDOWN_TIMEOUT (10 s by default).
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "dist/src/cli.js"]
CMD ["serve"]
