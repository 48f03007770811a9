#!/usr/bin/env bash
# Stops the server started by start-postgres.sh (PG_TEST_DIR from its output) and removes its
# folder: the server is throwaway, and a stopped one would leave its data in /tmp.
set -euo pipefail
dir="${PG_TEST_DIR:?set PG_TEST_DIR (printed by start-postgres.sh)}"
bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -m fast stop >&2 || true
else "$bin/pg_ctl" -D "$dir/data" -m fast stop >&2 || true; fi
# Only a folder start-postgres.sh made (its cluster inside): never whatever PG_TEST_DIR names.
if [ -f "$dir/data/PG_VERSION" ]; then rm -rf "$dir"; fi
