#!/usr/bin/env bash
# py-setup.sh CLIENT_DIR: create (or reuse) the venv $GREGOR_CACHE/venv/<client> and install the
# client's pinned requirements.txt into it, wheels only. Idempotent: a venv whose recorded
# requirements equal the current file is left alone. Serialized by a lock (parallel runs).
set -euo pipefail
CLIENT_DIR="$(cd "$1" && pwd)"
CLIENT="$(basename "$CLIENT_DIR")"
REPO="$(cd "$CLIENT_DIR/../../.." && pwd)"
CACHE="${GREGOR_CACHE:-$REPO/.cache}"
VENV="$CACHE/venv/$CLIENT"
REQ="$CLIENT_DIR/requirements.txt"
PYTHON="${PYTHON:-python3}"
mkdir -p "$CACHE/venv"
exec 9>"$CACHE/venv/.$CLIENT.lock"
flock 9
if [ -x "$VENV/bin/python" ] && cmp -s "$REQ" "$VENV/.requirements.txt" \
   && "$VENV/bin/python" -c 'import sys' 2>/dev/null; then
  echo "$CLIENT: venv up to date ($VENV)"
  exit 0
fi
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install --disable-pip-version-check --no-input -q --only-binary=:all: -r "$REQ"
cp "$REQ" "$VENV/.requirements.txt"
echo "$CLIENT: installed $(grep -v '^#' "$REQ" | tr '\n' ' ')into $VENV"
