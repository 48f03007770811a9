#!/usr/bin/env bash
# Stops the server started by start-postgres.sh (PG_TEST_DIR from its output).
set -euo pipefail
dir="${PG_TEST_DIR:?set PG_TEST_DIR (printed by start-postgres.sh)}"
bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -m fast stop >&2 || true
else "$bin/pg_ctl" -D "$dir/data" -m fast stop >&2 || true; fi
