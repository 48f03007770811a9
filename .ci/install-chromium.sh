#!/usr/bin/env bash
# Installs Debian's chromium for the browser test of Swagger UI (test/swagger-ui.e2e-spec.ts),
# which drives /usr/bin/chromium with playwright-core (never `playwright install`).
# Idempotent: skipped when /usr/bin/chromium already exists. Needs root (or sudo) and apt.
# Usage: .ci/install-chromium.sh
set -euo pipefail

CHROMIUM=/usr/bin/chromium
log() { printf '[install-chromium] %s\n' "$*"; }

if [[ -x "$CHROMIUM" ]]; then
  log "$CHROMIUM already installed, skipping"
  exit 0
fi

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then SUDO=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
log "installing Debian's chromium (and fonts-liberation, for readable screenshots) with apt-get"
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null

if [[ ! -x "$CHROMIUM" ]]; then
  log "error: $CHROMIUM is still missing after apt-get install" >&2
  exit 1
fi
log "installed: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
