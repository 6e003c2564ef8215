#!/bin/sh
# Regenerates broker/security/scram/testdata/kafka.tsv with Apache Kafka
# 4.4.0's classes. Needs Java 17 and Maven (for the jars, once).
set -eu
cd "$(dirname "$0")"
V=4.4.0
M2=${M2_REPO:-$HOME/.m2/repository}
for a in org.apache.kafka:kafka-clients:$V org.apache.kafka:kafka-server-common:$V \
	org.apache.kafka:kafka-metadata:$V org.slf4j:slf4j-api:1.7.36; do
	mvn -q dependency:get -Dartifact=$a >/dev/null
done
CP=$M2/org/apache/kafka/kafka-clients/$V/kafka-clients-$V.jar
CP=$CP:$M2/org/apache/kafka/kafka-server-common/$V/kafka-server-common-$V.jar
CP=$CP:$M2/org/apache/kafka/kafka-metadata/$V/kafka-metadata-$V.jar
CP=$CP:$M2/org/slf4j/slf4j-api/1.7.36/slf4j-api-1.7.36.jar
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
javac -d "$OUT" -cp "$CP" Gen.java
java -cp "$OUT:$CP" Gen >../../broker/security/scram/testdata/kafka.tsv
echo "wrote broker/security/scram/testdata/kafka.tsv ($(wc -l <../../broker/security/scram/testdata/kafka.tsv) lines)"
