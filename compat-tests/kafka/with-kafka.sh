#!/usr/bin/env bash
# with-kafka.sh CMD [ARGS...]: start a fresh reference Apache Kafka on free loopback ports, run CMD
# with GREGOR_KAFKA_BOOTSTRAP=127.0.0.1:PORT in its environment, and stop Kafka however CMD ends.
# Used for Go tests that compare Gregor's codecs with Kafka's answers (protocol/batch/kafka_test.go).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="$(mktemp -d "${TMPDIR:-/tmp}/gregor-kafka-XXXXXX")"
cleanup() { "$here/kafka.sh" stop "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
out="$("$here/kafka.sh" start "$dir")"
GREGOR_KAFKA_BOOTSTRAP="$(printf '%s\n' "$out" | sed -n 's/^BOOTSTRAP=//p')"
[ -n "$GREGOR_KAFKA_BOOTSTRAP" ] || { echo "with-kafka.sh: Kafka did not report its address" >&2; exit 1; }
export GREGOR_KAFKA_BOOTSTRAP
"$@"
