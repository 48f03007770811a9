#!/usr/bin/env bash
# Installs redis-server from Debian's packages when missing, for the multi-replica relay tests.
# Each test file starts its own throwaway server on a free loopback port (test/support/redis.ts),
# so nothing is started here and the system service is left alone.
set -euo pipefail
if ! command -v redis-server >/dev/null 2>&1; then
  echo "installing redis-server from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  # The package's own service is not wanted: tests run their own servers.
  apt-get install -y -qq --no-install-recommends redis-server >&2
fi
redis-server --version >&2
