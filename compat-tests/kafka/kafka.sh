#!/usr/bin/env bash
# Apache Kafka reference broker for the compatibility tests.
#
#   kafka.sh fetch              resolve Kafka ${KAFKA_VERSION} (broker, tools, clients and their
#                               runtime deps) from Maven Central into $GREGOR_CACHE; idempotent, and
#                               a no-op (no mvn, no network) when the cache is complete
#   kafka.sh start DIR          format a fresh single-node combined KRaft node in DIR and start it on
#                               free 127.0.0.1 ports; prints BOOTSTRAP=127.0.0.1:PORT and
#                               DATA_DIR=<log dir> on stdout once the broker answers requests
#   kafka.sh stop DIR           stop the broker started in DIR (TERM, then KILL after 15 s)
#   kafka.sh start-cluster DIR  format and start three combined KRaft nodes (ids 1-3, one quorum, a
#                               shared cluster id) in DIR/node-N on free ports, with replication factor
#                               3 and min.insync.replicas 2 for new and internal topics; prints
#                               BOOTSTRAP=HOST:PORT,HOST:PORT,HOST:PORT and DATA_DIR=<node 1's log dir>
#   kafka.sh stop-cluster DIR   stop every node of the cluster in DIR
#   kafka.sh kill-node DIR N    SIGKILL node N of the cluster in DIR (a crash)
#   kafka.sh start-node DIR N   start node N of the cluster in DIR again (same ports and data)
#   kafka.sh classpath          print the classpath of the cached jars
#   kafka.sh run CLASS ARGS...  run a Kafka main class (a CLI tool) with the cached classpath
#   kafka.sh build-cds          build the class-data-sharing archive that speeds up tool start-up
#   kafka.sh version            print the Kafka version
#
# Environment: GREGOR_CACHE (default <repo>/.cache), JAVA (default java), MVN (default mvn);
# for start: KAFKA_PORT (listener port, default a free one), KAFKA_LOG_DIR (default DIR/data),
# KAFKA_START_TIMEOUT (seconds, default 120), KAFKA_HEAP_OPTS (the broker JVM's heap, default
# "-Xms512m -Xmx512m"; kafka-server-start.sh uses "-Xmx1G -Xms1G"); for start and start-cluster:
# KAFKA_LISTENER_PROTOCOL (the client listener's name and security protocol, default PLAINTEXT; SSL
# or SASL_SSL need their ssl.* keys from KAFKA_EXTRA_PROPERTIES; the controller listener stays
# PLAINTEXT), KAFKA_EXTRA_PROPERTIES (a file appended to every node's server.properties; for SASL_SSL it
# names the inter-broker mechanism and the listener's JAAS login too, since the client listener is the
# inter-broker one), KAFKA_FORMAT_ARGS (more arguments of the storage format step, split on white space:
# `--add-scram SCRAM-SHA-512=[name=USER,password=PASSWORD]` creates a SCRAM user before the start).
set -euo pipefail

KAFKA_VERSION=4.2.2
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
GREGOR_CACHE="${GREGOR_CACHE:-$REPO/.cache}"
KAFKA_HOME="$GREGOR_CACHE/kafka-$KAFKA_VERSION"
LIBS="$KAFKA_HOME/libs"
JAVA="${JAVA:-java}"
MVN="${MVN:-mvn}"

# JVM options for short-lived tools: a small heap, C1 only (start-up matters more than peak speed)
# and, once built, a class-data-sharing archive of the tools' classes (see build_cds).
TOOL_JVM_OPTS=(-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto
  -Djava.awt.headless=true "-Dlog4j2.configurationFile=$HERE/log4j2-tools.properties")

log() { echo "kafka.sh: $*" >&2; }
die() { log "$*"; exit 1; }

classpath() {
  [ -f "$KAFKA_HOME/.complete" ] || die "Kafka $KAFKA_VERSION is not fetched; run: $0 fetch"
  # a fixed order keeps the CDS archive valid from run to run
  local cp="" j
  for j in $(cd "$LIBS" && ls -1 *.jar | LC_ALL=C sort); do cp="$cp${cp:+:}$LIBS/$j"; done
  printf '%s\n' "$cp"
}

cmd_fetch() {
  if [ -f "$KAFKA_HOME/.complete" ] && [ -f "$KAFKA_HOME/pom.xml" ] && cmp -s "$HERE/pom.xml" "$KAFKA_HOME/pom.xml"; then
    return 0
  fi
  command -v "$MVN" >/dev/null || die "mvn not found (needed once to fetch Kafka from Maven Central)"
  log "fetching Apache Kafka $KAFKA_VERSION into $KAFKA_HOME"
  local tmp="$KAFKA_HOME.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  cp "$HERE/pom.xml" "$tmp/pom.xml"
  if ! (cd "$tmp" && "$MVN" -q -B -Dstyle.color=never -f pom.xml org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
          -DincludeScope=runtime -DoutputDirectory="$tmp/libs" >&2); then
    rm -rf "$tmp"
    die "mvn could not resolve Kafka $KAFKA_VERSION"
  fi
  [ -f "$tmp/libs/kafka_2.13-$KAFKA_VERSION.jar" ] || { rm -rf "$tmp"; die "kafka_2.13-$KAFKA_VERSION.jar missing after fetch"; }
  touch "$tmp/.complete"
  rm -rf "$KAFKA_HOME"
  mv "$tmp" "$KAFKA_HOME"
  log "fetched $(ls "$LIBS" | wc -l) jars"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

random_cluster_id() {
  # 16 random bytes, URL-safe base64 without padding: the form Kafka's Uuid.toString() has.
  # One in 64 starts with '-', so the caller must pass it as --cluster-id=ID, not as a separate word.
  head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n'
}

cmd_run() {
  [ $# -ge 1 ] || die "usage: $0 run CLASS [ARGS...]"
  local cls="$1"; shift
  local cp; cp="$(classpath)"
  local cds=()
  if [ -f "$KAFKA_HOME/tools.jsa" ] && [ "$(cat "$KAFKA_HOME/tools.jsa.jvm" 2>/dev/null)" = "$(jvm_id)" ]; then
    cds=(-XX:SharedArchiveFile="$KAFKA_HOME/tools.jsa")
  fi
  exec "$JAVA" "${TOOL_JVM_OPTS[@]}" "${cds[@]}" -cp "$cp" "$cls" "$@"
}

# build_cds: a static AppCDS archive of the classes the CLI tools load, made once per cache.
# It roughly halves the start-up of each tool JVM. It is only an optimisation: any failure
# leaves no archive and the tools run without one.
# a CDS archive is only valid for the JVM that wrote it
jvm_id() {
  readlink -f "$(command -v "$JAVA")"
}

cmd_build_cds() {
  local cp; cp="$(classpath)"
  if [ -f "$KAFKA_HOME/tools.jsa" ] && [ "$(cat "$KAFKA_HOME/tools.jsa.jvm" 2>/dev/null)" = "$(jvm_id)" ]; then
    return 0
  fi
  rm -f "$KAFKA_HOME/tools.jsa" "$KAFKA_HOME/tools.jsa.jvm"
  local list="$KAFKA_HOME/tools.classlist.tmp"
  rm -f "$list" "$list".*
  local cls i=0
  for cls in org.apache.kafka.tools.TopicCommand org.apache.kafka.tools.ConsoleProducer \
             org.apache.kafka.tools.consumer.ConsoleConsumer org.apache.kafka.tools.consumer.group.ConsumerGroupCommand \
             kafka.admin.ConfigCommand org.apache.kafka.tools.GetOffsetShell org.apache.kafka.tools.DeleteRecordsCommand \
             org.apache.kafka.tools.ProducerPerformance org.apache.kafka.tools.ConsumerPerformance \
             kafka.tools.DumpLogSegments; do
    i=$((i+1))
    "$JAVA" "${TOOL_JVM_OPTS[@]}" -Xshare:off -XX:DumpLoadedClassList="$list.$i" -cp "$cp" "$cls" --help >/dev/null 2>&1 || true
  done
  cat "$list".* 2>/dev/null | grep -v '^#' | LC_ALL=C sort -u > "$list" || true
  rm -f "$list".*
  if [ -s "$list" ] && "$JAVA" -Xshare:dump -XX:SharedClassListFile="$list" \
        -XX:SharedArchiveFile="$KAFKA_HOME/tools.jsa.tmp" -cp "$cp" >/dev/null 2>&1; then
    mv "$KAFKA_HOME/tools.jsa.tmp" "$KAFKA_HOME/tools.jsa"
    jvm_id > "$KAFKA_HOME/tools.jsa.jvm"
  else
    rm -f "$KAFKA_HOME/tools.jsa.tmp"
    log "note: no class-data-sharing archive (tools start a little slower)"
  fi
  rm -f "$list"
}

# write_server_properties DIR NODE_ID VOTERS PORT CONTROLLER_PORT LOG_DIR RF MIN_ISR WHAT: the
# server.properties of a combined broker+controller node into DIR. RF and MIN_ISR apply to new topics and
# the internal ones; a single node (RF 1) keeps Kafka's default min.insync.replicas, so that the broker
# does not report it as set. WHAT ends the comment at the top.
write_server_properties() {
  local dir="$1" id="$2" voters="$3" port="$4" cport="$5" logdir="$6" rf="$7" isr="$8" what="$9"
  local proto="${KAFKA_LISTENER_PROTOCOL:-PLAINTEXT}"
  cat > "$dir/server.properties" <<EOF
# written by compat-tests/kafka/kafka.sh$what
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
listeners=$proto://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=$proto://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=$proto
listener.security.protocol.map=$proto:$proto,CONTROLLER:PLAINTEXT
log.dirs=$logdir
auto.create.topics.enable=true
num.partitions=1
default.replication.factor=$rf
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
delete.topic.enable=true
# The scenarios write records with fixed 2023 CreateTimes, which the default 7-day retention
# would delete at the first retention check (30 s after start). Keep retention's defaults
# (the configs scenario reads retention.ms) but run no retention check during a test run.
log.initial.task.delay.ms=3600000
log.retention.check.interval.ms=3600000
EOF
  if [ "$rf" -gt 1 ]; then
    echo "min.insync.replicas=$isr" >> "$dir/server.properties"
  fi
  if [ -n "${KAFKA_EXTRA_PROPERTIES:-}" ]; then
    { echo "# from \$KAFKA_EXTRA_PROPERTIES ($KAFKA_EXTRA_PROPERTIES)"; cat "$KAFKA_EXTRA_PROPERTIES"; } >> "$dir/server.properties"
  fi
}

# format_node DIR CLUSTER_ID: format the KRaft log dir named by DIR/server.properties; the tool's output
# is in DIR/format.log, and on stderr when it fails.
format_node() {
  local dir="$1" cid="$2" cp
  cp="$(classpath)"
  local extra=()
  # KAFKA_FORMAT_ARGS: more words for the format step (e.g. --add-scram SCRAM-SHA-512=[name=u,password=p]),
  # split on white space
  if [ -n "${KAFKA_FORMAT_ARGS:-}" ]; then read -r -a extra <<< "$KAFKA_FORMAT_ARGS"; fi
  if ! "$JAVA" "${TOOL_JVM_OPTS[@]}" -cp "$cp" kafka.tools.StorageTool format \
         --cluster-id="$cid" -c "$dir/server.properties" "${extra[@]}" > "$dir/format.log" 2>&1; then
    cat "$dir/format.log" >&2
    return 1
  fi
}

cmd_start() {
  [ $# -eq 1 ] || die "usage: $0 start DIR"
  local dir="$1"
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  if [ -f "$dir/kafka.pid" ] && kill -0 "$(cat "$dir/kafka.pid")" 2>/dev/null; then
    die "a broker is already running from $dir (pid $(cat "$dir/kafka.pid"))"
  fi
  classpath > /dev/null
  local port cport
  port="${KAFKA_PORT:-$(free_port)}"
  cport="$(free_port)"
  while [ "$cport" = "$port" ]; do cport="$(free_port)"; done
  local logdir="${KAFKA_LOG_DIR:-$dir/data}"
  if [ -z "${KAFKA_LOG_DIR:-}" ]; then rm -rf "$logdir"; fi
  mkdir -p "$logdir"
  write_server_properties "$dir" 1 "1@127.0.0.1:$cport" "$port" "$cport" "$logdir" 1 1 ": single-node combined KRaft broker"
  local cid; cid="$(random_cluster_id)"
  echo "$cid" > "$dir/cluster.id"
  format_node "$dir" "$cid" || die "formatting the KRaft data dir failed"
  # a fresh start: the logs of an earlier broker in DIR go
  : > "$dir/server.log"
  : > "$dir/kafka.out"
  local launched
  if ! launched="$(launch_node "$dir" "$port")"; then
    cmd_stop "$dir" || true
    exit 1
  fi
  echo "127.0.0.1:$port" > "$dir/bootstrap"
  echo "BOOTSTRAP=127.0.0.1:$port"
  echo "DATA_DIR=$logdir"
  echo "$launched"
}

# launch_node DIR PORT: start the broker whose server.properties is in DIR and wait until it reports
# started (again, on a restart) and serves PORT; prints PID=.
launch_node() {
  local dir="$1" port="$2" cp heap started_before
  cp="$(classpath)"
  : >> "$dir/server.log"
  started_before="$(grep -c 'Kafka Server started' "$dir/server.log" 2>/dev/null || true)"
  read -r -a heap <<< "${KAFKA_HEAP_OPTS:--Xms512m -Xmx512m}"
  "$JAVA" "${heap[@]}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true \
    -Dkafka.logs.dir="$dir" "-Dlog4j2.configurationFile=$HERE/log4j2-server.properties" \
    -cp "$cp" kafka.Kafka "$dir/server.properties" >> "$dir/kafka.out" 2>&1 < /dev/null &
  local pid=$!
  echo "$pid" > "$dir/kafka.pid"
  disown "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + ${KAFKA_START_TIMEOUT:-120}))
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 40 "$dir/kafka.out" "$dir/server.log" >&2 || true
      die "Kafka exited during start-up (logs in $dir)"
    fi
    if [ "$(grep -c 'Kafka Server started' "$dir/server.log" 2>/dev/null || true)" -gt "$started_before" ] \
       && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      break
    fi
    if [ $SECONDS -ge $deadline ]; then
      tail -n 40 "$dir/kafka.out" "$dir/server.log" >&2 || true
      cmd_stop "$dir" || true
      die "Kafka did not become ready within ${KAFKA_START_TIMEOUT:-120}s (logs in $dir)"
    fi
    sleep 0.2
  done
  echo "PID=$pid"
}

cmd_start_cluster() {
  [ $# -eq 1 ] || die "usage: $0 start-cluster DIR"
  local dir="$1" n
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  classpath > /dev/null
  local ports=() cports=() voters=""
  for n in 1 2 3; do
    ports[n]="$(free_port)"
    cports[n]="$(free_port)"
    voters="$voters${voters:+,}$n@127.0.0.1:${cports[n]}"
  done
  local cid; cid="$(random_cluster_id)"
  echo "$cid" > "$dir/cluster.id"
  local bootstrap=""
  for n in 1 2 3; do
    local nd="$dir/node-$n"
    rm -rf "$nd"
    mkdir -p "$nd/data"
    write_server_properties "$nd" "$n" "$voters" "${ports[n]}" "${cports[n]}" "$nd/data" 3 2 \
      " start-cluster: node $n of a three-node combined KRaft cluster"
    echo "${ports[n]}" > "$nd/port"
    format_node "$nd" "$cid" || die "formatting node $n failed"
    bootstrap="$bootstrap${bootstrap:+,}127.0.0.1:${ports[n]}"
  done
  # the three start together: a combined node waits for its quorum before it reports started
  local pids=() rc=0 p
  for n in 1 2 3; do
    launch_node "$dir/node-$n" "${ports[n]}" > "$dir/node-$n/launch.out" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  if [ $rc -ne 0 ]; then
    cmd_stop_cluster "$dir"
    die "the cluster did not start (logs in $dir)"
  fi
  echo "$bootstrap" > "$dir/bootstrap"
  echo "BOOTSTRAP=$bootstrap"
  echo "DATA_DIR=$dir/node-1/data"
}

cmd_stop_cluster() {
  [ $# -eq 1 ] || die "usage: $0 stop-cluster DIR"
  local n p pids=()
  for n in 1 2 3; do
    if [ -d "$1/node-$n" ]; then
      cmd_stop "$1/node-$n" &
      pids+=($!)
    fi
  done
  for p in "${pids[@]}"; do wait "$p" || true; done
}

cmd_kill_node() {
  [ $# -eq 2 ] || die "usage: $0 kill-node DIR N"
  local nd="$1/node-$2"
  [ -f "$nd/kafka.pid" ] || die "node $2 is not running"
  local pid; pid="$(cat "$nd/kafka.pid")"
  if tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q 'kafka.Kafka'; then
    kill -KILL "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  fi
  rm -f "$nd/kafka.pid"
}

cmd_start_node() {
  [ $# -eq 2 ] || die "usage: $0 start-node DIR N"
  local nd="$1/node-$2"
  [ -f "$nd/server.properties" ] || die "no node $2 in $1"
  launch_node "$nd" "$(cat "$nd/port")"
}

cmd_stop() {
  [ $# -eq 1 ] || die "usage: $0 stop DIR"
  local dir="$1"
  [ -f "$dir/kafka.pid" ] || return 0
  local pid; pid="$(cat "$dir/kafka.pid")"
  # make sure the pid is still our broker before signalling it
  if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q 'kafka.Kafka'; then
    kill -TERM "$pid" 2>/dev/null || true
    local i
    for i in $(seq 1 75); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "Kafka (pid $pid) did not stop on TERM; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.2
    fi
  fi
  rm -f "$dir/kafka.pid"
}

main() {
  local sub="${1:-}"
  [ $# -gt 0 ] && shift
  case "$sub" in
    fetch) cmd_fetch "$@" ;;
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    start-cluster) cmd_start_cluster "$@" ;;
    stop-cluster) cmd_stop_cluster "$@" ;;
    kill-node) cmd_kill_node "$@" ;;
    start-node) cmd_start_node "$@" ;;
    classpath) classpath ;;
    run) cmd_run "$@" ;;
    build-cds) cmd_build_cds ;;
    version) echo "$KAFKA_VERSION" ;;
    libs) echo "$LIBS" ;;
    *) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
}

main "$@"
