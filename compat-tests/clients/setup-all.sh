#!/usr/bin/env bash
# setup-all.sh [CLIENT...]: run every client adapter's ./setup here (or the named ones), keep going
# past a failure, and exit 1 if any failed. Each setup is idempotent; see README.md.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ $# -eq 0 ]; then
  set -- $(cd "$HERE" && for d in */; do d="${d%/}"; [ -x "$d/setup" ] && echo "$d"; done)
fi
failed=()
for c in "$@"; do
  start=$SECONDS
  if bash "$HERE/$c/setup"; then
    echo "setup-all: $c ok ($((SECONDS - start)) s)"
  else
    echo "setup-all: $c FAILED" >&2
    failed+=("$c")
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "setup-all: failed: ${failed[*]}" >&2; exit 1; }
