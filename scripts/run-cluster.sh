#!/usr/bin/env bash
# Starts a local three-node Gregor cluster (combined broker and controller
# nodes): Kafka listeners 127.0.0.1:9092-9094, controller listeners
# 127.0.0.1:9192-9194, HTTP 127.0.0.1:9644-9646, data in ./data/node-N.
# Ctrl-C stops all three. BIN overrides the binary (default bin/gregor).
set -euo pipefail
BIN=${BIN:-bin/gregor}
QUORUM=1@127.0.0.1:9192,2@127.0.0.1:9193,3@127.0.0.1:9194
pids=()
stop() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	wait
}
trap stop INT TERM EXIT
for n in 1 2 3; do
	mkdir -p "data/node-$n"
	"$BIN" serve --node-id "$n" --listen "127.0.0.1:909$((n + 1))" \
		--controller-listen "127.0.0.1:919$((n + 1))" --controller-quorum "$QUORUM" \
		--http-listen "127.0.0.1:964$((n + 3))" --data-dir "data/node-$n" > >(sed "s/^/node-$n: /") 2>&1 &
	pids+=($!)
done
echo "gregor cluster: bootstrap servers 127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094 (Ctrl-C stops it)"
wait
