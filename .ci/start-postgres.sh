#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server on 127.0.0.1 for the end-to-end tests and prints the
# URL to use as TEST_DATABASE_URL. Installs PostgreSQL from Debian's packages when missing.
#   eval "$(bash .ci/start-postgres.sh)"   # sets TEST_DATABASE_URL and PG_TEST_DIR
# Stop it with: bash .ci/stop-postgres.sh
set -euo pipefail

port="${PG_TEST_PORT:-55432}"
# Another server (a developer's, a second CI run) may hold the default port: take a free one.
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
fi
find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
bin="$(find_bin)"
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "installing PostgreSQL from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
  bin="$(find_bin)"
fi

dir="${PG_TEST_DIR:-$(mktemp -d /tmp/plant-store-pg.XXXXXX)}"
mkdir -p "$dir"
as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
[ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
if [ ! -f "$dir/data/PG_VERSION" ]; then
  as_postgres "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >/dev/null
fi
as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-h 127.0.0.1 -p $port -k $dir -c fsync=on" start >&2
echo "export PG_TEST_DIR='$dir'"
echo "export TEST_DATABASE_URL='postgres://postgres@127.0.0.1:$port/postgres'"
