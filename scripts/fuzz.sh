#!/usr/bin/env bash
# Runs every Fuzz target of the given packages for FUZZTIME each (make fuzz).
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when -fuzztime runs out while a worker is busy, without any
# failing input (golang/go#75804, fixed in Go 1.27). A run that ends that way
# is run once more; any other failure, or that one twice, fails.
set -euo pipefail
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10s}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

fuzz_once() { # pkg target
	"$GO" test -run='^$' -fuzz="^$2\$" -fuzztime="$FUZZTIME" "$1" >"$log" 2>&1
}

coordinator_race() {
	grep -q '^    context deadline exceeded$' "$log" && ! grep -q 'Failing input written' "$log"
}

for pkg in "$@"; do
	for target in $("$GO" test -list '^Fuzz' "$pkg" | grep '^Fuzz'); do
		echo "fuzz $pkg $target"
		if fuzz_once "$pkg" "$target"; then
			tail -n 2 "$log"
			continue
		fi
		cat "$log"
		if ! coordinator_race; then
			exit 1
		fi
		echo "fuzz: $target ended on Go's fuzz-coordinator deadline race (golang/go#75804), no failing input; running it again"
		if ! fuzz_once "$pkg" "$target"; then
			cat "$log"
			exit 1
		fi
		tail -n 2 "$log"
	done
done
