#!/usr/bin/env bash
# Installs promtool (Prometheus's rule checker and rule unit-test runner), pinned, built with
# `go install github.com/prometheus/prometheus/cmd/promtool@<version>` into $PLANT_STORE_TOOLS/bin.
# Prometheus 3.x Go modules are versioned v0.3xx.y (v0.316.0 is Prometheus 3.16.0).
# Used by test/prometheus-rules.spec.ts (promtool check rules, promtool test rules).
# Idempotent: a binary already built from the pinned version is kept. A cold build (empty Go
# module and build caches) takes several minutes on 2 cores: .ci/run starts it in the background.
# Needs: go (module proxy). Usage: .ci/install-promtool.sh
set -euo pipefail

PROMTOOL_VERSION=v0.316.0
TOOLS="${PLANT_STORE_TOOLS:-$HOME/.cache/plant-store-tools}"
BIN="$TOOLS/bin"
mkdir -p "$BIN"
log() { printf '[install-promtool] %s\n' "$*"; }

# The module version the binary was built from; asking promtool itself gives the Prometheus
# version (3.x), not the module's.
installed_version() {
  [[ -x "$BIN/promtool" ]] || return 0
  go version -m "$BIN/promtool" 2>/dev/null | awk '$1 == "mod" { print $3 }'
}

if [[ "$(installed_version)" == "$PROMTOOL_VERSION" ]]; then
  log "promtool $PROMTOOL_VERSION already installed at $BIN/promtool, skipping"
  exit 0
fi
log "installing promtool $PROMTOOL_VERSION (several minutes the first time)"
started=$SECONDS
GOBIN="$BIN" go install "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION"
have="$(installed_version)"
if [[ "$have" != "$PROMTOOL_VERSION" ]]; then
  log "error: $BIN/promtool reports version '$have', expected $PROMTOOL_VERSION" >&2
  exit 1
fi
log "promtool $PROMTOOL_VERSION installed in $((SECONDS - started)) s"
