#!/usr/bin/env bash
# librdkafka.sh runs librdkafka's own test suite (tests/ of confluentinc/librdkafka) against
# one samsa node or one Apache Kafka 4.4 node and prints a table of each test's result.
#
#   librdkafka.sh [samsa|kafka] [TESTS]
#
#   TESTS   comma- or space-separated test numbers (0001,0012 ...); default: every number
#           in the suite's test list (tests/test.c). Local tests (TEST_F_LOCAL, mock cluster,
#           no broker) and known-issue tests are filtered by the runner (-L, and its default
#           -K) and counted as "filtered", not listed in the table.
#
# Manual: CI has neither the sources nor the time (the C build takes about 3 minutes of both
# cores; the quick broker tests about 12 minutes on samsa and 25 on Kafka). Build needs: a C
# and C++ compiler, make, python3, libssl-dev, zlib1g-dev, libzstd-dev (apt); Kafka's tools
# and the reference broker need what compat-tests/kafka-ref needs (java, mvn).
# The sources come from, in this order:
#   RDK_SRC=DIR         an unpacked librdkafka source tree (default /tmp/rdk-src)
#   RDK_TARBALL=FILE    a tarball of one (e.g. `git archive v2.11.1` of the repository, or
#                       GitHub's source tarball), unpacked into RDK_SRC if that has no tree
# The version that matches confluent-kafka-go v2.11.1 (go.mod) is librdkafka v2.11.1.
# librdkafka is configured without GSSAPI and curl (no Kerberos, no OIDC) and built once;
# the build is reused while RDK_SRC/tests/test-runner exists.
#
# Other settings:
#   RDK_TESTS_DIR=DIR   run the test-runner of DIR instead of RDK_SRC/tests (a copy beside it
#                       with a test patched for a diagnosis; it must be built already)
#   RDK_WORK=DIR        where broker data, logs and per-test outputs go
#                       (default /tmp/rdk-suite-<broker>-<pid>; kept for reading)
#   RDK_TEST_TIMEOUT=S  wall-clock limit of one test number (default 600)
#   RDK_TMOUT_MULTIPLIER=F  the suite's test.timeout.multiplier (default 3: 2 shared cores)
#   RDK_GROUP_DELAY_MS=N  group.initial.rebalance.delay.ms of both brokers (default 3000,
#                       Kafka's default, which the suite's trivup clusters keep: with 0 the
#                       first consumer of a group gets a generation of its own, and 0102 and
#                       0118, which expect both consumers in the first one, fail on either)
#   RDK_PARTITIONS=N    num.partitions of both brokers (default 4, the suite's default
#                       scenario, tests/scenarios/default.json)
#   RDK_RUNNER_ARGS     test-runner flags (default "-Q -L -p1": quick mode, no local
#                       tests, one test at a time)
#   TEST_KAFKA_VERSION  the broker version the suite assumes (default 4.0.0: the suite
#                       has no checks above 4.0, and 4.4 is the reference)
#   SAMSA_BINARY=FILE   a samsa binary; default: `go build ./cmd/samsa` of this checkout
#   SAMSA_REPO=DIR      the samsa checkout (default: the one holding this script; set it
#                       when running a copy of the script, e.g. to edit it meanwhile)
#   RDK_SCENARIO=noautocreate  the suite's other scenario (tests/scenarios/noautocreate.json):
#                       brokers with auto.create.topics.enable=false, runner -s noautocreate
#                       (0045's topic removal and partition change, 0107, 0111)
#   TEST_CONSUMER_GROUP_PROTOCOL=consumer  every consumer of the suite with group.protocol=consumer
#                       (KIP-848); default classic
#   RDK_AUTHORIZER=0    run the brokers without an authorizer (default: the StandardAuthorizer
#                       with allow.everyone.if.no.acl.found=true, as the suite's trivup
#                       clusters run, so the ACL tests of 0081, 0109, 0115, 0119 can work)
#
# Some tests call Kafka's CLI scripts ($KAFKA_PATH/bin/kafka-topics.sh, kafka-acls.sh,
# kafka-configs.sh, with $BROKERS): the script points KAFKA_PATH at wrappers that run
# Kafka 4.4's tools through compat-tests/kafka-ref/kafka-ref.sh, against either broker.
# Tests that start Java helper programs (test_run_java: 0098, 0113's Java subtest) need a
# Kafka source tree and fail or skip here.
#
# The table has one row per test the runner reported: PASSED, FAILED (with the suite's
# failure text), SKIPPED (with its reason) or TIMEOUT (the whole number was killed after
# RDK_TEST_TIMEOUT). Per-test output: RDK_WORK/out/NNNN.log. Exit status: 0 when no test
# failed or timed out.
set -euo pipefail
# The shared functions of the samsa checkout (SAMSA_REPO when a copy of this script runs).
# shellcheck source=lib.sh
. "${SAMSA_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}/compat-tests/suites/lib.sh"

broker=${1:-samsa}
tests_arg=${2:-}
check_broker "$broker" "[samsa|kafka] [TESTS]"

src=${RDK_SRC:-/tmp/rdk-src}
work=${RDK_WORK:-/tmp/rdk-suite-$broker-$$}
test_timeout=${RDK_TEST_TIMEOUT:-600}
multiplier=${RDK_TMOUT_MULTIPLIER:-3}
partitions=${RDK_PARTITIONS:-4}
group_delay=${RDK_GROUP_DELAY_MS:-3000}
runner_args=${RDK_RUNNER_ARGS:--Q -L -p1}
scenario=${RDK_SCENARIO:-default}
autocreate=true
case $scenario in
default) ;;
noautocreate)
	autocreate=false
	runner_args="$runner_args -s noautocreate"
	;;
*) die "RDK_SCENARIO: default or noautocreate, not $scenario" ;;
esac
export TEST_KAFKA_VERSION=${TEST_KAFKA_VERSION:-4.0.0}


# --- sources and build -------------------------------------------------------------------
if [[ ! -f $src/tests/test.c ]]; then
	[[ -n ${RDK_TARBALL:-} ]] || die "no librdkafka sources in $src (set RDK_SRC or RDK_TARBALL)"
	mkdir -p "$src"
	# GitHub's tarballs have one top directory (librdkafka-2.11.1/), git archive none.
	strip=0
	tar -tf "$RDK_TARBALL" | grep -q '^[^/]*/tests/test\.c$' && strip=1
	tar -xf "$RDK_TARBALL" -C "$src" --strip-components=$strip
	[[ -f $src/tests/test.c ]] || die "$RDK_TARBALL has no tests/test.c"
fi
if [[ ! -x $src/tests/test-runner ]]; then
	say "building librdkafka and its tests in $src (a few minutes)"
	(
		cd "$src"
		# The test runner's Makefile includes ../Makefile.config, which configure writes.
		# configure's output must not go to ./configure.* : mklove loads every
		# configure.<name> file of the directory as a module.
		[[ -f Makefile.config ]] || ./configure --no-download --disable-gssapi --disable-curl \
			--disable-lz4-ext >"$src/rdk-configure.out" 2>&1
		make -j"$(nproc)" libs >"$src/rdk-build.out" 2>&1
		make -j"$(nproc)" -C tests build >>"$src/rdk-build.out" 2>&1
	) || die "build failed; see $src/rdk-configure.out and $src/rdk-build.out"
fi

# --- the broker --------------------------------------------------------------------------
mkdir -p "$work/out"
samsa_pid=
stop_broker() {
	if [[ $broker == kafka ]]; then
		"$KREF" stop "$work/kafka" >/dev/null 2>&1 || true
	else
		stop_pid "$samsa_pid"
	fi
}
trap stop_broker EXIT

authz_overrides=()
if [[ ${RDK_AUTHORIZER:-1} == 1 ]]; then
	authz_overrides=(authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
		allow.everyone.if.no.acl.found=true)
fi
if [[ $broker == kafka ]]; then
	KAFKA_REF_OVERRIDES=$(printf '%s\n' "num.partitions=$partitions" "auto.create.topics.enable=$autocreate" \
		"group.initial.rebalance.delay.ms=$group_delay" \
		"${authz_overrides[@]}") \
		"$KREF" start "$work/kafka" >/dev/null ||
		die "kafka-ref start failed"
	bootstrap=$(cut -d, -f1 "$work/kafka/bootstrap")
else
	bin=${SAMSA_BINARY:-}
	if [[ -z $bin ]]; then
		bin=$work/samsa
		build_samsa "$bin"
	fi
	port=$(free_ports 1)
	bootstrap=127.0.0.1:$port
	mkdir -p "$work/samsa-data"
	"$bin" --override "listeners=PLAINTEXT://$bootstrap" \
		--override "advertised.listeners=PLAINTEXT://$bootstrap" \
		--override "log.dirs=$work/samsa-data" --override node.id=1 \
		--override "num.partitions=$partitions" --override "auto.create.topics.enable=$autocreate" \
		--override "group.initial.rebalance.delay.ms=$group_delay" \
		"${authz_overrides[@]/#/--override=}" \
		>"$work/samsa.log" 2>&1 &
	samsa_pid=$!
	# shellcheck disable=SC2317 # called by poll_ready
	alive() { pidfiles_alive "$work/samsa.log" -- "+$samsa_pid"; }
	# shellcheck disable=SC2317
	probe() { "$bin" health -b "$bootstrap" -q --timeout 2s >/dev/null 2>&1; }
	poll_ready 120 "samsa on $bootstrap" alive probe || die "samsa did not answer; see $work/samsa.log"
fi
version_line=$(broker_version "$broker")
say "$version_line on $bootstrap; work dir $work"

cat >"$work/test.conf" <<EOF
bootstrap.servers=$bootstrap
test.timeout.multiplier=$multiplier
test.topic.random=true
EOF
export RDKAFKA_TEST_CONF=$work/test.conf

# $KAFKA_PATH/bin/<tool>.sh wrappers around Kafka 4.4's tools (kafka-ref.sh tool).
tool_wrappers "$work/kafka-path" kafka-topics kafka-acls kafka-configs
export KAFKA_PATH=$work/kafka-path BROKERS=$bootstrap

# --- the tests ---------------------------------------------------------------------------
if [[ -n $tests_arg ]]; then
	numbers=$(echo "$tests_arg" | tr ', ' '\n\n' | grep -E '^[0-9]{4}$' | sort -u)
else
	# Every number in the suite's list, manual (8xxx) tests excluded.
	numbers=$(sed -n '/^struct test tests\[\]/,/^};/p' "$src/tests/test.c" |
		grep -oE '_TEST\([0-9]{4}_' | grep -oE '[0-9]{4}' | grep -v '^8' | sort -u)
fi
[[ -n $numbers ]] || die "no tests selected"

results=$work/results.tsv
: >"$results"
cd "${RDK_TESTS_DIR:-$src/tests}"
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:../src:../src-cpp
for n in $numbers; do
	log=$work/out/$n.log
	start=$(date +%s)
	set +e
	# shellcheck disable=SC2086
	TESTS=$n timeout --kill-after=10 "$test_timeout" ./test-runner $runner_args >"$log" 2>&1
	rc=$?
	set -e
	took=$(($(date +%s) - start))
	# Summary rows: "|<color> NAME | STATE | 1.234s <clr>| reason", colors stripped.
	rows=$(sed -e 's/\x1b\[[0-9;]*m//g' "$log" |
		awk -F'|' -v n="$n" 'NF >= 4 && $2 ~ "^ *"n"_" {
			name=$2; state=$3; reason=$5; for (i = 6; i <= NF; i++) reason = reason "|" $i
			gsub(/^ +| +$/, "", name); gsub(/^ +| +$/, "", state); gsub(/^ +| +$/, "", reason)
			print name "\t" state "\t" reason }')
	if [[ -z $rows && $rc -ne 124 && $rc -ne 137 ]]; then
		# No summary: a failed assertion aborted the runner (test_fail0's assert, e.g.
		# when a failed test leaves librdkafka threads behind). Its failure banner
		# names the test and the next line says why:
		#   ### Test "0011_produce_batch (sub:629)" failed at FILE:LINE:FUNC() at DATE: ###
		rows=$(sed -e 's/\x1b\[[0-9;]*m//g' "$log" |
			awk -v n="$n" '/^### Test "/ && $0 ~ "\"" n "_" {
				name=$0; sub(/^### Test "/, "", name); where=name; sub(/[ "].*/, "", name)
				sub(/^[^"]*" failed at /, "", where); sub(/ at [A-Z][a-z][a-z] .*/, "", where)
				getline why; print name "\tFAILED\t" why " (" where "; runner aborted)" }' | sort -u -t$'\t' -k1,1)
	fi
	if [[ $rc -eq 124 || $rc -eq 137 || -z $rows ]]; then
		why="killed after ${test_timeout}s"
		[[ $rc -eq 124 || $rc -eq 137 ]] || why="no summary (exit $rc)"
		printf '%s\tTIMEOUT\t%s\n' "$n" "$why" >>"$results"
	else
		while IFS=$'\t' read -r name state reason; do
			case $reason in
			*"negative test flags"*) state=FILTERED ;;
			esac
			printf '%s\t%s\t%s\n' "$name" "$state" "$reason" >>"$results"
		done <<<"$rows"
	fi
	say "$n done in ${took}s (exit $rc)"
done

# --- the table ---------------------------------------------------------------------------
echo
echo "librdkafka $(cd "$src" && grep -m1 -oE 'RD_KAFKA_VERSION +0x[0-9a-f]+' src/rdkafka.h | awk '{print $2}') test suite against $version_line (TEST_KAFKA_VERSION=$TEST_KAFKA_VERSION, runner $runner_args, group protocol ${TEST_CONSUMER_GROUP_PROTOCOL:-classic})"
printf '%-52s %-8s %s\n' TEST RESULT DETAIL
grep -v $'\tFILTERED\t' "$results" | while IFS=$'\t' read -r name state reason; do
	printf '%-52s %-8s %s\n' "$name" "$state" "${reason:0:160}"
done
count() { awk -F'\t' -v s="$1" '$2 == s' "$results" | wc -l; }
echo
echo "passed $(count PASSED), failed $(count FAILED), skipped $(count SKIPPED), timeout $(count TIMEOUT), filtered (local/known issue) $(count FILTERED)"
echo "results: $results; logs: $work/out/"
[[ $(count FAILED) -eq 0 && $(count TIMEOUT) -eq 0 ]]
