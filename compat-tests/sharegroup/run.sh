#!/usr/bin/env bash
# Regenerates coordinator/group/fixtures/share-*.txt with Kafka 4.4.0's own
# classes (Java 17 and Maven; the jars come from Maven Central).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:-$HERE/../../coordinator/group/fixtures}"
BUILD="$(mktemp -d)"
trap 'rm -rf "$BUILD"' EXIT
(cd "$HERE" && mvn -q -B dependency:build-classpath -Dmdep.outputFile="$BUILD/cp.txt")
CP="$(cat "$BUILD/cp.txt")"
javac -d "$BUILD/classes" -cp "$CP" $(find "$HERE/src" -name '*.java')
java -cp "$BUILD/classes:$CP" org.apache.kafka.coordinator.group.FixtureGen "$OUT"
