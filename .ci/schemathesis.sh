#!/usr/bin/env bash
# Runs schemathesis against the built app's /openapi.json with a token: no 5xx, no answer that
# breaks the document, 405 for undeclared methods, every check. Uses the embedded store, or
# PostgreSQL when DATABASE_URL is set. Needs `npm run build` and schemathesis on PATH (or ST).
#   bash .ci/schemathesis.sh
set -euo pipefail
cd "$(dirname "$0")/.."
st="${ST:-schemathesis}"
work="$(mktemp -d /tmp/plant-store-st.XXXXXX)"
token="schemathesis-$(node -e "console.log(require('node:crypto').randomBytes(24).toString('hex'))")"
port() { node -e "const s=require('node:net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
api="$(port)"; health="$(port)"; metrics="$(port)"
mkdir -p "$work/config" && echo '{"mcpServers":{}}' > "$work/config/mcp-servers.json"

env -i PATH="$PATH" HOME="$HOME" NODE_ENV=test API_TOKENS="$token" HOST=127.0.0.1 PORT="$api" \
  SERVICE_HEALTH_CHECK_PORT="$health" SERVICE_METRICS_PORT="$metrics" SERVICE_LOG_LEVEL=warn \
  SERVICE_CONFIG_DIR="$work/config" DATA_DIR="$work/data" ${DATABASE_URL:+DATABASE_URL="$DATABASE_URL"} \
  node dist/bundle/main.js > "$work/app.log" 2>&1 &
app=$!
trap 'kill $app 2>/dev/null || true; wait $app 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$health/health" >/dev/null 2>&1 && break
  sleep 0.2
done

# One worker: hypothesis's lambda introspection is not thread-safe in this version.
# A fixed seed keeps CI reproducible: the same cases every run, so a red run means a change,
# not a draw. (A random draw once found `{"id": -9007199254740992.0}` refused; JSON Schema counts
# such a whole number as an integer, and lossless-json.ts now reads it as the exact integer it
# spells, so the draw passes.) Change the seed to explore.
"$st" run "http://127.0.0.1:$api/openapi.json" \
  --header "Authorization: Bearer $token" \
  --checks all --max-examples 100 --workers 1 --no-color \
  --seed "${ST_SEED:-242211703088342325941073164420450353153}"
