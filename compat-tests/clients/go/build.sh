#!/usr/bin/env bash
# Builds the one binary behind all Go adapters ($GREGOR_CACHE/bin/compat-go) from this module.
# confluent-kafka-go needs cgo (a C compiler); it links the librdkafka bundled in the module.
# Idempotent (skips when the binary is newer than every source; --force rebuilds), serialized by a lock; the Go module and build caches are the
# user's default ones. A fresh machine takes about 70 s (downloads and the cgo build).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
CACHE="${GREGOR_CACHE:-$REPO/.cache}"
mkdir -p "$CACHE/bin"
exec 9>"$CACHE/bin/.compat-go.lock"
flock 9
BIN="$CACHE/bin/compat-go"
if [ "${1:-}" != "--force" ] && [ -x "$BIN" ] && [ -z "$(find "$HERE" -maxdepth 1 \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) -newer "$BIN" -print -quit)" ]; then
  echo "compat-go: up to date ($BIN)"
  exit 0
fi
cd "$HERE"
CGO_ENABLED=1 go build -o "$CACHE/bin/compat-go.tmp.$$" .
mv -f "$CACHE/bin/compat-go.tmp.$$" "$CACHE/bin/compat-go"
echo "compat-go: built $CACHE/bin/compat-go"
