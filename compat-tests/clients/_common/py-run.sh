#!/usr/bin/env bash
# py-run.sh CLIENT_DIR ARGS...: run CLIENT_DIR/adapter.py with the client's venv python, running the
# client's setup first (output to stderr) if the venv is missing or its requirements changed.
set -euo pipefail
CLIENT_DIR="$(cd "$1" && pwd)"
shift
CLIENT="$(basename "$CLIENT_DIR")"
REPO="$(cd "$CLIENT_DIR/../../.." && pwd)"
CACHE="${GREGOR_CACHE:-$REPO/.cache}"
VENV="$CACHE/venv/$CLIENT"
if [ ! -x "$VENV/bin/python" ] || ! cmp -s "$CLIENT_DIR/requirements.txt" "$VENV/.requirements.txt"; then
  if ! bash "$CLIENT_DIR/setup" >&2; then
    echo "{\"ok\": false, \"observed\": {}, \"error\": \"$CLIENT setup failed: run compat-tests/clients/$CLIENT/setup\"}"
    exit 1
  fi
fi
exec "$VENV/bin/python" "$CLIENT_DIR/adapter.py" "$@"
