# syntax=docker/dockerfile:1
# Plant Store image: build with `docker build -t <registry>/plant-store:<version> .` and tag it
# with the release version (e.g. 1.1.0); never push or deploy "latest".
# Runs as uid/gid 1000 on a read-only root filesystem: it writes only to /app/data (data volume),
# /app/repos (repos volume) and /tmp (HOME and npm's cache for npx-based MCP servers).

# One Node.js major for every stage; pin a digest here for byte-for-byte rebuilds.
ARG NODE_IMAGE=node:24-bookworm-slim

# Toolchain for better-sqlite3's native build (approved by allowScripts in package.json).
FROM ${NODE_IMAGE} AS toolchain
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json ./

# Production dependencies only, built for this image's Node.js and libc.
FROM toolchain AS prod-deps
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# Every dependency, then the compiled app in dist/ and its bundles in dist/bundle/.
FROM toolchain AS build
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY scripts/bundle.mjs scripts/commonjs-imports.mjs scripts/drop-kept-names.mjs ./scripts/
COPY src ./src
RUN npm run build

FROM ${NODE_IMAGE} AS runtime
ARG VERSION=1.1.0
LABEL org.opencontainers.image.title="plant-store" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="MIT"
# tini as PID 1: forwards SIGTERM to Node (which drains and stops its MCP servers) and reaps the
# grandchildren that npx- and sh-started MCP servers leave behind.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini ca-certificates \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# Owned by root and not writable by the app user: the code cannot be changed at run time.
COPY --from=prod-deps /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
# Mount points owned by the app user, and an empty MCP server list so `docker run` works without
# a config volume (the chart mounts its ConfigMap over /app/config).
RUN mkdir -p /app/data /app/repos /app/config \
  && printf '{"mcpServers":{}}\n' > /app/config/mcp-servers.json \
  && chown 1000:1000 /app/data /app/repos
# NODE_OPTIONS: the chart's nodeOptions default (helm/plant-store/values.yaml says why).
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=16 \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/app/data \
    SERVICE_REPOS_DIR=/app/repos \
    SERVICE_CONFIG_DIR=/app/config \
    SERVICE_HEALTH_CHECK_PORT=8080 \
    SERVICE_METRICS_PORT=9090 \
    HOME=/tmp \
    TMPDIR=/tmp \
    NPM_CONFIG_CACHE=/tmp/.npm \
    NPM_CONFIG_UPDATE_NOTIFIER=false
# The node image's "node" user is 1000:1000; numeric so runAsNonRoot can check it.
USER 1000:1000
VOLUME ["/app/data", "/app/repos"]
EXPOSE 3000 8080 9090
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+process.env.SERVICE_HEALTH_CHECK_PORT+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
# --initial-old-space-size: the chart's nodeArgs default (values.yaml says why).
CMD ["node", "--initial-old-space-size=128", "dist/bundle/main.js"]
