#!/usr/bin/env bash
# Installs the pinned tools the Helm chart's tests use (test/helm/*.spec.ts):
#   helm v3.19.0, kubeconform v0.7.0 and helm-docs v1.14.2 (the chart README's values table),
#   built with `go install` into $PLANT_STORE_TOOLS/bin,
#   and offline Kubernetes JSON schemas for 1.19.0 and 1.33.0 into $PLANT_STORE_TOOLS/k8s-schemas.
# The tools live outside the checkout so repeated CI runs on one machine reuse them.
# Idempotent: a tool already at its pinned version and schemas already unpacked are skipped.
# Needs: go (module proxy), python3 with pip (PyPI). Usage: .ci/install-helm-tools.sh
set -euo pipefail

HELM_VERSION=v3.19.0
KUBECONFORM_VERSION=v0.7.0
HELM_DOCS_VERSION=v1.14.2
TOOLS="${PLANT_STORE_TOOLS:-$HOME/.cache/plant-store-tools}"
BIN="$TOOLS/bin"
SCHEMAS="$TOOLS/k8s-schemas"
mkdir -p "$BIN" "$SCHEMAS"
log() { printf '[install-helm-tools] %s\n' "$*"; }
log "tools folder: $TOOLS"

# The version of the Go module each binary was built from (`go version -m`). Asking the tool
# itself is not reliable: helm built by `go install` reports "v3.19", without the patch level.
installed_version() {
  [[ -x "$BIN/$1" ]] || return 0
  go version -m "$BIN/$1" 2>/dev/null | awk '$1 == "mod" { print $3 }'
}

go_install() { # name version module how-long
  local have
  have="$(installed_version "$1")"
  if [[ "$have" == "$2" ]]; then
    log "$1 $2 already installed at $BIN/$1, skipping"
    return
  fi
  log "installing $1 $2 (go install $3@$2; $4)"
  GOBIN="$BIN" go install "$3@$2"
  have="$(installed_version "$1")"
  if [[ "$have" != "$2" ]]; then
    log "error: $BIN/$1 reports version '$have', expected $2" >&2
    exit 1
  fi
  log "$1 $2 installed"
}

go_install helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm \
  "several minutes the first time"
go_install kubeconform "$KUBECONFORM_VERSION" github.com/yannh/kubeconform/cmd/kubeconform \
  "about a minute the first time"
go_install helm-docs "$HELM_DOCS_VERSION" github.com/norwoodj/helm-docs/cmd/helm-docs \
  "about two minutes the first time"

# Kubernetes JSON schemas from PyPI's kubernetes-validate (see helm/plant-store/README.md#tests):
#   kubernetes-validate==1.27.0 (sdist) carries v1.19.0-local-strict, usable as is;
#   kubernetes-validate==1.37.0 (wheel) carries v1.33.0-local-strict, whose files have
#   "$id": "https://kubernetes.io/api/..." and refs to /api/_definitions.json that make
#   kubeconform look on the network; we drop $id and make the refs relative.
fetch_schemas() { # package-version kube-version
  local dest="$SCHEMAS/v$2-local-strict"
  if [[ -f "$dest/.complete" ]]; then
    log "schemas for Kubernetes $2 already at $dest, skipping"
    return
  fi
  local work
  work="$(mktemp -d)"
  log "downloading kubernetes-validate==$1 from PyPI for the Kubernetes $2 schemas"
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    "kubernetes-validate==$1" -d "$work"
  log "unpacking v$2-local-strict into $dest"
  rm -rf "$dest"
  python3 - "$work" "$2" "$dest" <<'PY'
import json, os, pathlib, sys, tarfile, zipfile

work, version, dest = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
marker = f"/kubernetes-json-schema/v{version}-local-strict/"
(archive,) = [os.path.join(work, n) for n in os.listdir(work)]

def members():
    if archive.endswith(".whl"):
        with zipfile.ZipFile(archive) as z:
            for name in z.namelist():
                if marker in name and name.endswith(".json"):
                    yield name, z.read(name)
    else:
        with tarfile.open(archive) as t:
            for m in t.getmembers():
                if marker in m.name and m.name.endswith(".json") and m.isfile():
                    yield m.name, t.extractfile(m).read()

def localize(node):
    """Drop $id and make /api/_definitions.json refs relative, so nothing is fetched."""
    if isinstance(node, dict):
        node.pop("$id", None)
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("/api/_definitions.json"):
            node["$ref"] = ref[len("/api/"):]
        for value in node.values():
            localize(value)
    elif isinstance(node, list):
        for value in node:
            localize(value)

dest.mkdir(parents=True)
count = 0
for name, data in members():
    doc = json.loads(data)
    localize(doc)
    (dest / name.rsplit("/", 1)[1]).write_text(json.dumps(doc))
    count += 1
if count < 100:
    sys.exit(f"only {count} schema files found for v{version} in {archive}")
print(f"[install-helm-tools] {count} schema files written")
PY
  touch "$dest/.complete"
  rm -rf "$work"
}

fetch_schemas 1.27.0 1.19.0
fetch_schemas 1.37.0 1.33.0

log "done: helm $(installed_version helm), kubeconform $(installed_version kubeconform)," \
  "helm-docs $(installed_version helm-docs)"
log "schemas: $(ls -d "$SCHEMAS"/*/ | tr '\n' ' ')"
