#!/usr/bin/env bash
# bench/replication.sh measures acks=all produce and consume throughput, the brokers'
# CPU per GB and end-to-end latency with replication factor 3 (min.insync.replicas=2)
# on three local nodes, next to replication factor 1, for samsa and for Apache Kafka
# 4.4 (started by compat-tests/kafka-ref/kafka-ref.sh), a fresh cluster per case, and
# prints a markdown table of medians and min-max with the ratios samsa/Kafka. See
# bench/README.md.
#
#   bench/replication.sh            # 3 rounds, 200,000 x 1 KiB, 20 s e2e at 1,000/s
#   bench/replication.sh --quick    # 1 round, 50,000 x 1 KiB, 5 s e2e
#   bench/replication.sh -kafka=false   # samsa only (Go only; no Java or Maven)
#   bench/replication.sh [--quick] [flags of bench/replication: -rounds N -records N ...]
#
# Needs Go; for Kafka also java and mvn (kafka-ref.sh). Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=()
args=()
for a in "$@"; do
	case $a in
	--quick) quick=(-rounds 1 -records 50000 -e2e-duration 5s) ;;
	*) args+=("$a") ;;
	esac
done

bin=$(mktemp -d "${TMPDIR:-/tmp}/samsa-replication-bin.XXXXXX")
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/samsa" ./cmd/samsa
go build -o "$bin/samsa-load" ./cmd/samsa-load
go build -o "$bin/replication" ./bench/replication
echo "go: $(go version | cut -d' ' -f3)" >&2
"$bin/replication" -samsa "$bin/samsa" -load "$bin/samsa-load" "${quick[@]}" "${args[@]}"
