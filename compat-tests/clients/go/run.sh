#!/usr/bin/env bash
# run.sh CLIENT SCENARIO ARGS...: run the prebuilt compat-go binary for one Go client,
# (re)building it first if it is missing or older than a source file of this module.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
CACHE="${GREGOR_CACHE:-$REPO/.cache}"
BIN="$CACHE/bin/compat-go"
if [ ! -x "$BIN" ] || [ -n "$(find "$HERE" -maxdepth 1 \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) -newer "$BIN" -print -quit)" ]; then
  if ! bash "$HERE/build.sh" >&2; then
    echo '{"ok": false, "observed": {}, "error": "building compat-go failed: run compat-tests/clients/go/build.sh"}'
    exit 1
  fi
fi
exec "$BIN" "$@"
