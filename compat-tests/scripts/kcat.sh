#!/usr/bin/env bash
# kcat.sh drives a samsa broker with kcat (librdkafka) and exits non-zero on any failed check.
#
#   kcat.sh BOOTSTRAP TOPIC_PREFIX
#
# kcat has no admin commands, so the topics PREFIX-<codec> for codec in
# none gzip snappy lz4 zstd must exist with 6 partitions (the Go wrapper creates
# them; standalone, run the broker with num.partitions=6 and auto-create on).
#
# For each codec it produces RECORDS records with acks=all, partition by partition
# (-p N), in two halves separated by a marker time; reads every partition back with
# the group-less consumer (-C -p N -o beginning -e) and compares offset, key, value
# and header line by line; and asks for the offset of the marker time (-Q), which
# must be the first record of the second half.
set -euo pipefail

if [[ $# -ne 2 ]]; then
	echo "usage: $0 BOOTSTRAP TOPIC_PREFIX" >&2
	exit 2
fi
bootstrap=$1
prefix=$2
KCAT=${KCAT:-kcat}
PARTITIONS=6
RECORDS=10000
HALF=$((RECORDS / 2))
FILLER=samsa-compat-payload-samsa-compat-payload-samsa-compat-payload-samsa-compat-payload
failures=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ok() { echo "ok   $*"; }
fail() {
	echo "FAIL $*"
	failures=$((failures + 1))
}

# kc SECONDS ARGS...: one kcat run, ended after SECONDS so that a client that never sees
# the end of a partition (or never gets an answer) fails its check instead of hanging.
kc() {
	local limit=$1
	shift
	timeout --kill-after=5 "$limit" "$KCAT" -b "$bootstrap" -X socket.timeout.ms=10000 "$@"
}

# Regression: samsa once answered a Fetch of a partition with nothing new with a null
# records field (length -1) where Kafka sends an empty one; librdkafka logged
# "invalid MessageSetSize -1" as PROTOERR and never reported end of partition, so
# `kcat -e` read every record and then hung. Both the limit and the PROTOERR check
# below catch that.
#
# The first consume that times out waits CONSUME_LIMIT seconds; once one has, the rest
# get 5 seconds each, which is enough to read 1,667 records and keeps a broker that
# never signals end-of-partition from stretching the run to half an hour.
CONSUME_LIMIT=30

# expected_before P N: how many records of partition P have index < N (record i goes to i % 6).
expected_before() {
	local p=$1 n=$2
	if ((n > p)); then echo $(((n - p + PARTITIONS - 1) / PARTITIONS)); else echo 0; fi
}

# write_input CODEC P FROM TO: key:value lines for records FROM <= i < TO of partition P.
write_input() {
	awk -v c="$1" -v p="$2" -v f="$3" -v t="$4" -v n="$PARTITIONS" -v fill="$FILLER" \
		'BEGIN { for (i = f; i < t; i++) if (i % n == p) printf "key-%d:%s-%d-%s\n", i, c, i, fill }'
}

now_ms() { date +%s%3N; }

echo "kcat: $("$KCAT" -V 2>&1 | grep -m1 Version)"

for codec in none gzip snappy lz4 zstd; do
	topic=$prefix-$codec

	# Metadata: the topic is known with 6 partitions, each with a leader.
	kc 30 -L -t "$topic" >"$work/md" 2>&1 || true
	if grep -q "topic \"$topic\" with $PARTITIONS partitions" "$work/md" &&
		[[ $(grep -c 'leader [0-9]' "$work/md") -eq $PARTITIONS ]]; then
		ok "metadata -L $topic: $PARTITIONS partitions with leaders"
	else
		fail "metadata -L $topic:"
		cat "$work/md"
		continue
	fi

	# Produce both halves; the marker is a millisecond strictly after every first-half
	# timestamp and at or before every second-half timestamp.
	start=$(now_ms)
	produced_ok=1
	for half in 0 1; do
		from=$((half * HALF))
		to=$(((half + 1) * HALF))
		for ((p = 0; p < PARTITIONS; p++)); do
			write_input "$codec" "$p" "$from" "$to" >"$work/in"
			if ! kc 60 -P -t "$topic" -p "$p" -K: -z "$codec" -H src=kcat \
				-X acks=all -X linger.ms=5 -X message.timeout.ms=30000 \
				-l "$work/in" >"$work/produce.log" 2>&1; then
				fail "produce $topic[$p] half $half with $codec:"
				cat "$work/produce.log"
				produced_ok=0
			elif grep -qi 'error\|failed' "$work/produce.log"; then
				fail "produce $topic[$p] half $half with $codec reported errors:"
				cat "$work/produce.log"
				produced_ok=0
			fi
		done
		if ((half == 0)); then
			marker=$(($(now_ms) + 1))
			while (($(now_ms) <= marker)); do :; done
		fi
	done
	((produced_ok)) && ok "produce $RECORDS records acks=all -z $codec over $PARTITIONS partitions in $(($(now_ms) - start)) ms"

	# Consume every partition from the beginning and compare with what was sent.
	for ((p = 0; p < PARTITIONS; p++)); do
		write_input "$codec" "$p" 0 "$RECORDS" | awk -F: '{ k = $1; sub(/^[^:]*:/, ""); printf "%d|%s|%s|src=kcat\n", NR - 1, k, $0 }' >"$work/want"
		rc=0
		kc "$CONSUME_LIMIT" -C -t "$topic" -p "$p" -o beginning -e -u -f '%o|%k|%s|%h\n' >"$work/got" 2>"$work/consume.log" || rc=$?
		if ((rc == 124 || rc == 137)); then
			fail "consume $topic[$p]: kcat -e did not exit within ${CONSUME_LIMIT}s (no end of partition seen) after $(wc -l <"$work/got") of $(wc -l <"$work/want") records ($(cmp -s "$work/want" "$work/got" && echo "those match" || echo "content differs"))"
			CONSUME_LIMIT=5
			continue
		elif grep -q PROTOERR "$work/consume.log"; then
			# librdkafka logs PROTOERR for a response it cannot parse, then backs off and
			# retries, so the records can still all arrive; Kafka never causes one.
			fail "consume $topic[$p]: librdkafka reported protocol errors:"
			grep -m3 PROTOERR "$work/consume.log"
			continue
		elif ((rc != 0)); then
			fail "consume $topic[$p]: kcat exit $rc:"
			cat "$work/consume.log"
			continue
		fi
		if cmp -s "$work/want" "$work/got"; then
			ok "consume -C -p $p -o beginning -e $topic: $(wc -l <"$work/got") records, content and order match"
		else
			fail "consume $topic[$p]: got $(wc -l <"$work/got") records, want $(wc -l <"$work/want"); first difference:"
			diff "$work/want" "$work/got" | head -5 || true
		fi
	done

	# Offsets by timestamp: the marker falls between the halves; timestamp 0 is the start.
	args=()
	for ((p = 0; p < PARTITIONS; p++)); do args+=(-t "$topic:$p:$marker"); done
	kc 30 -Q "${args[@]}" >"$work/q" 2>&1 || true
	for ((p = 0; p < PARTITIONS; p++)); do
		want=$(expected_before "$p" "$HALF")
		got=$(awk -v t="$topic" -v p="[$p]" '$1 == t && $2 == p && $3 == "offset" { print $4 }' "$work/q")
		if [[ "$got" == "$want" ]]; then
			ok "-Q $topic:$p:<marker> = offset $got"
		else
			fail "-Q $topic:$p:<marker> = '$got', want $want; kcat said:"
			cat "$work/q"
		fi
	done
	kc 30 -Q -t "$topic:0:0" >"$work/q0" 2>&1 || true
	got=$(awk -v t="$topic" '$1 == t && $2 == "[0]" && $3 == "offset" { print $4 }' "$work/q0")
	if [[ "$got" == "0" ]]; then ok "-Q $topic:0:0 = offset 0"; else
		fail "-Q $topic:0:0 = '$got', want 0:"
		cat "$work/q0"
	fi
done

if ((failures == 0)); then
	echo "kcat: all checks passed"
else
	echo "kcat: $failures checks failed"
	exit 1
fi
