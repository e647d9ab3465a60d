#!/usr/bin/env bash
# bench/compare.sh runs the same load against samsa and Apache Kafka 4.4 (one node each,
# equivalent settings, started in turn, alternating) and prints a markdown table of
# medians, min-max and samsa/Kafka ratios. See bench/README.md.
#
#   bench/compare.sh            # full: 3 rounds, 200,000 x 1 KiB, 1,000,000 x 100 B, 1,000,000 x 1 KiB
#                               # with 2 client processes each way, 20 s e2e at 1,000/s, 10,000/s and 50,000/s
#   bench/compare.sh --quick    # short: 1 round, 50,000 x 1 KiB, 200,000 x 100 B, 200,000 with -procs, 5 s e2e
#   bench/compare.sh [--quick] [flags of bench/compare: -rounds N -records-1k N ...]
#
# Needs Go, java, mvn and python3 (kafka-ref.sh). Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=()
args=()
for a in "$@"; do
	case $a in
	--quick) quick=(-rounds 1 -records-1k 50000 -records-100 200000 -records-procs 200000 -e2e-duration 5s -e2e-rate 1000 -settle 3s) ;;
	*) args+=("$a") ;;
	esac
done

bin=$(mktemp -d "${TMPDIR:-/tmp}/samsa-compare-bin.XXXXXX")
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/samsa" ./cmd/samsa
go build -o "$bin/samsa-load" ./cmd/samsa-load
go build -o "$bin/compare" ./bench/compare
compat-tests/kafka-ref/kafka-ref.sh fetch
echo "go: $(go version | cut -d' ' -f3), java: $(java -version 2>&1 | head -1)" >&2
"$bin/compare" -samsa "$bin/samsa" -load "$bin/samsa-load" \
	-kafka-ref compat-tests/kafka-ref/kafka-ref.sh "${quick[@]}" "${args[@]}"
