#!/usr/bin/env bash
# Runs every scenario against Kafka 4.4's own SharePartition and writes the
# transcripts broker/share's TestKafkaTranscripts compares with:
#   compat-tests/share-partition/regen.sh
# Needs Java 17 and Maven (the Kafka jars come from Maven Central).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="$HERE/../../broker/share/testdata/kafka"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
(cd "$HERE" && mvn -q -B dependency:build-classpath -Dmdep.outputFile="$WORK/cp.txt")
CP="$(cat "$WORK/cp.txt")"
javac -nowarn -d "$WORK/classes" -cp "$CP" "$HERE/src/kafka/server/share/ShareHarness.java"
mkdir -p "$OUT"
for f in "$HERE"/scenarios/*.txt; do
  java -cp "$WORK/classes:$CP" kafka.server.share.ShareHarness < "$f" 2>"$WORK/stderr" > "$OUT/$(basename "$f")" || {
    cat "$WORK/stderr" >&2
    exit 1
  }
done
echo "wrote $(ls "$HERE"/scenarios/*.txt | wc -l) transcripts to $OUT"
