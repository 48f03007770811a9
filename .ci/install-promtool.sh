#!/usr/bin/env bash
# Installs promtool (Prometheus's rule checker and rule unit-test runner) from Debian's
# prometheus package, for test/helm/prometheus-rules.spec.ts. Debian's 2.42 checks and tests
# these rules; building it from the Go module proxy instead took 12 CPU-minutes and 3.3 GB.
# The package's daemon is not started. Idempotent: skipped when promtool is on PATH or in
# $PLANT_STORE_TOOLS/bin. Needs root (or sudo) and apt. Usage: .ci/install-promtool.sh
set -euo pipefail

TOOLS="${PLANT_STORE_TOOLS:-$HOME/.cache/plant-store-tools}"
log() { printf '[install-promtool] %s\n' "$*"; }

if command -v promtool >/dev/null || [[ -x "$TOOLS/bin/promtool" ]]; then
  log "promtool already installed, skipping"
  exit 0
fi

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then SUDO=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
log "installing Debian's prometheus package (for promtool) with apt-get"
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends prometheus >/dev/null
# The package enables its daemon where an init system runs; these tests need only promtool.
"${SUDO[@]}" systemctl disable --now prometheus >/dev/null 2>&1 || true

command -v promtool >/dev/null || { log "error: no promtool after apt-get install" >&2; exit 1; }
log "installed: $(promtool --version 2>&1 | head -n 1)"
