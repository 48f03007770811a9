#!/usr/bin/env bash
# The upstream contract check: the public "OpenAPI Plant Store" document must stay a subset of
# our committed openapi.json, so clients generated from it keep working. Installs oasdiff
# v1.35.0 with `go install` into $PLANT_STORE_TOOLS/bin (skipped when that version is there),
# then runs `oasdiff breaking <upstream> openapi.json --fail-on ERR`; exits non-zero on any error.
# The upstream file lives outside the project (CI has ../shared); it is never copied in.
#   bash .ci/oasdiff.sh              install if needed, then check
#   bash .ci/oasdiff.sh --install    install only
set -euo pipefail
cd "$(dirname "$0")/.."

OASDIFF_VERSION=v1.35.0
TOOLS="${PLANT_STORE_TOOLS:-$HOME/.cache/plant-store-tools}"
BIN="$TOOLS/bin"
UPSTREAM="${UPSTREAM_OPENAPI:-../shared/upstream/plant-store.openapi.json}"
log() { printf '[oasdiff] %s\n' "$*"; }

# The module version the binary was built from; the npm package named oasdiff is a placeholder.
installed_version() {
  [[ -x "$BIN/oasdiff" ]] || return 0
  go version -m "$BIN/oasdiff" 2>/dev/null | awk '$1 == "mod" { print $3 }'
}

if [[ "$(installed_version)" != "$OASDIFF_VERSION" ]]; then
  log "installing oasdiff $OASDIFF_VERSION (go install, about a minute the first time)"
  mkdir -p "$BIN"
  GOBIN="$BIN" go install "github.com/oasdiff/oasdiff@$OASDIFF_VERSION"
  if [[ "$(installed_version)" != "$OASDIFF_VERSION" ]]; then
    log "error: $BIN/oasdiff is '$(installed_version)', expected $OASDIFF_VERSION" >&2
    exit 1
  fi
fi
[[ "${1:-}" == "--install" ]] && exit 0

if [[ ! -f "$UPSTREAM" ]]; then
  log "error: the upstream document $UPSTREAM is missing" >&2
  exit 1
fi
log "oasdiff breaking $UPSTREAM openapi.json --fail-on ERR"
"$BIN/oasdiff" breaking "$UPSTREAM" openapi.json --fail-on ERR
log "no breaking change from the upstream document"
