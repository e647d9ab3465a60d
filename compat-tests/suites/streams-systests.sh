#!/usr/bin/env bash
# streams-systests.sh runs Kafka Streams' own system-test programs (Kafka's
# streams/src/test/java/org/apache/kafka/streams/tests: StreamsSmokeTest with SmokeTestDriver and
# SmokeTestClient, StreamsEosTest with EosTestDriver and EosTestClient,
# StreamsStandByReplicaTest) against a samsa cluster or
# an Apache Kafka 4.4 cluster, driven as Kafka's Python system tests drive them
# (tests/kafkatest/tests/streams/streams_smoke_test.py, streams_eos_test.py,
# streams_broker_bounce_test.py, streams_standby_replica_test.py), and prints a table of each
# test's result.
#
#   compat-tests/suites/streams-systests.sh [samsa|kafka] [TEST...]
#
#   TEST (default: all of them; a TEST runs once per group protocol of STREAMS_PROTOCOLS, a
#   TEST/PROTOCOL with that one only, e.g. eos_failure/streams):
#     smoke_eos_crash smoke_eos smoke_alos_crash smoke_alos
#         streams_smoke_test.py test_streams(processing_guarantee, crash): three processors
#         one after the other while the driver writes for 90 s; each of the first two is
#         stopped (SIGTERM, or SIGKILL when crash) once it processed records; the driver's
#         verification must print SUCCESS (or PROCESSED-MORE-THAN-GENERATED for
#         at_least_once with crashes)
#     eos_rebalance eos_rebalance_complex eos_failure eos_failure_complex
#         streams_eos_test.py run_rebalance / run_failure_and_recovery (simple or complex
#         topology): three EosTestClients started and stopped (or SIGKILLed) in the test's
#         order while the driver writes; then `verify` must print ALL-RECORDS-DELIVERED
#         (the mirror's verifier checks that the application is down with
#         Admin.describeConsumerGroups, which a streams group answers with GROUP_ID_NOT_FOUND
#         on Kafka 4.4 as on samsa; the build patches it to ask Admin.describeStreamsGroups then)
#     bounce_<clean_shutdown|hard_shutdown|clean_bounce|hard_bounce>_<1|3>
#         streams_broker_bounce_test.py test_broker_type_bounce(failure_mode, "leader",
#         num_threads): the driver and one at_least_once processor; after 120 s the broker
#         leading partition 0 of a random topic is stopped (SIGTERM / SIGKILL), or bounced five
#         times (restart), chasing the leader; the driver's output must hold
#         ALL-RECORDS-DELIVERED (or PROCESSED-MORE-THAN-GENERATED) and SUCCESS
#     many_<clean_shutdown|hard_shutdown|clean_bounce|hard_bounce>
#         test_many_brokers_bounce(num_failures=2): the same, the first node stopped
#         (in both, `fk`, which the driver writes, and `min-raw`, `sws-raw`, `*-suppressed` are
#         not created by the test, nor by Kafka's: auto-created with one replica, they are lost
#         with the node stopped when it holds them, on any broker, and with `fk` the driver then
#         retries forever; the script logs their placement and names the hazard, see test_bounce)
#     standby
#         streams_standby_replica_test.py test_standby_tasks_rebalance: three
#         StreamsStandByReplicaTest instances (one standby replica) started and stopped in the
#         test's order while a VerifiableProducer writes 300,000 records (6 keys, 15,000/s);
#         each step waits for the ACTIVE_TASKS:n STANDBY_TASKS:m lines the test expects; then
#         both sink topics must hold 300,000 records, the checkpointed offsets must never go
#         back (validateMonotonicCheckpointsCmd) and no output line says ERROR. For the
#         streams protocol the brokers get group.streams.num.standby.replicas=1 (standby
#         replicas of a streams group are the broker's setting, 0 by default)
#
# The programs are compiled at run time from a Kafka source tree (git archive of STREAMS_GIT,
# ~4.0) against Kafka 4.4's jars (kafka-ref.sh classpath: kafka-streams, kafka-clients, ...),
# patched with sed where 4.4 moved a class: org.apache.kafka.common.utils.Exit and
# KafkaThread are in common.utils.internals in 4.4, and SmokeTestClient's state directory
# (TestUtils.tempDirectory() of the clients' test jar, which Maven Central does not serve)
# is a fresh directory under java.io.tmpdir. A small admin helper (SysTestAdmin, written
# below) creates the tests' topics as the Python tests' KafkaService does and finds a
# partition's leader.
#
# The cluster, inside a private network namespace (`unshare -n`), is the Python tests'
# isolated KRaft: one controller-only node (node.id 100 on 127.0.1.100:9093) and three
# broker-only nodes (node.id 1..3, PLAINTEXT on 127.0.1.N:9092), Kafka's defaults otherwise
# (internal topics with replication factor 3, the transaction log's min.insync.replicas 2),
# the same settings for both brokers; one fresh cluster per test, as ducktape gives each.
# The group protocol: `classic`, or `streams` (KIP-1071: group.protocol=streams in the
# clients' properties; the brokers get group.streams.session.timeout.ms=10000, the
# session.timeout.ms the Python tests give their classic clients).
#
# Environment:
#   SUITES_WORK         scratch directory (default: a new /tmp/samsa-streams-systests-BROKER-XXXXXX,
#                       kept): classes/, results.tsv, table.txt, and per test run
#                       TEST-PROTOCOL/ (nodeN/ broker data and logs, one directory per process
#                       with streams.stdout, streams.stderr, streams.log)
#   STREAMS_GIT         Kafka's git directory (default /work/.mirror/apache+kafka/repo)
#   STREAMS_REV         its revision (default HEAD)
#   STREAMS_PROTOCOLS   group protocols to run each test with (default "classic streams")
#   STREAMS_SLOW        factor applied to the Python tests' timeouts (default 4: a loaded
#                       2-core machine runs eight JVMs per test)
#
# Needs: git, java and javac 17, mvn (first run), go, unshare and ip (root). Exit status: 0 when
# every test passed.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLUSTER_ID=9FsGpDpSQCe6bQhsEXnsLg
CONTROLLER=100
SLOW=${STREAMS_SLOW:-4}

all_tests="smoke_eos_crash smoke_eos smoke_alos_crash smoke_alos eos_rebalance eos_rebalance_complex eos_failure eos_failure_complex bounce_clean_shutdown_3 bounce_hard_shutdown_3 bounce_clean_bounce_3 bounce_hard_bounce_3 bounce_clean_shutdown_1 bounce_hard_shutdown_1 bounce_clean_bounce_1 bounce_hard_bounce_1 many_clean_shutdown many_hard_shutdown many_clean_bounce many_hard_bounce standby"

# ---- the cluster -------------------------------------------------------------------------

# node_ip N: node N's address.
node_ip() { echo "127.0.1.$1"; }

# broker_properties N: node N's settings (N = CONTROLLER for the controller), either broker.
broker_properties() {
	local n=$1
	cat <<EOF
node.id=$n
controller.listener.names=CONTROLLER
controller.quorum.voters=$CONTROLLER@$(node_ip $CONTROLLER):9093
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$T/node$n/data
group.streams.session.timeout.ms=10000
EOF
	[[ ${NAME:-} == standby ]] && echo "group.streams.num.standby.replicas=1"
	# Kafka's floor for the streams session timeout is 45 s (group.streams.min.session.timeout.ms);
	# a node (controller included) whose session timeout is below it does not start, on both brokers.
	echo "group.streams.min.session.timeout.ms=10000"
	if [[ $n == "$CONTROLLER" ]]; then
		echo "process.roles=controller"
		echo "listeners=CONTROLLER://$(node_ip "$n"):9093"
	else
		cat <<EOF
process.roles=broker
listeners=PLAINTEXT://$(node_ip "$n"):9092
advertised.listeners=PLAINTEXT://$(node_ip "$n"):9092
inter.broker.listener.name=PLAINTEXT
EOF
	fi
	return 0
}

# node_start N: starts node N in the background; its pid in nodeN/pid.
node_start() {
	local n=$1
	case $BROKER in
	samsa)
		local -a ov=()
		local kv
		while IFS= read -r kv; do ov+=(--override "$kv"); done <"$T/node$n/server.properties"
		env -i PATH="$PATH" HOME="$HOME" CLUSTER_ID="$CLUSTER_ID" \
			"$WORK/samsa" "${ov[@]}" >>"$T/node$n/broker.log" 2>&1 </dev/null &
		;;
	kafka)
		kafka_log4j2 "$T/node$n/log4j2.properties" "$T/node$n/broker.log"
		kafka_broker 768m "$T/node$n/server.properties" "$T/node$n/log4j2.properties" \
			>>"$T/node$n/stdout.log" 2>&1 </dev/null &
		;;
	esac
	echo $! >"$T/node$n/pid"
}

# node_signal N SIG: signals node N (TERM waits for it to exit, 120 s, then KILL).
node_signal() {
	local n=$1 sig=$2 p
	p=$(cat "$T/node$n/pid" 2>/dev/null) || p=
	[[ -n $p ]] || return 0
	if [[ $sig == KILL ]]; then
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	else
		kill -TERM "$p" 2>/dev/null || true
		local i
		for ((i = 0; i < 1200; i++)); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	fi
	: >"$T/node$n/pid"
	say "node $n stopped (SIG$sig)"
}

# node_ready N: waits until broker N answers Metadata listing itself.
node_ready() {
	READY_NODE=$1
	# shellcheck disable=SC2317 # alive is called by poll_ready
	alive() { pidfiles_alive "$T"/node*/broker.log -- "$T/node$READY_NODE/pid" "$T/node$CONTROLLER/pid"; }
	poll_ready 300 "node $1" alive "$WORK/samsa" health -q -b "$(node_ip "$1"):9092" --node-id "$1" --timeout 2s
}

cluster_start() {
	local n
	for n in $CONTROLLER 1 2 3; do
		mkdir -p "$T/node$n"
		broker_properties "$n" >"$T/node$n/server.properties"
		if [[ $BROKER == kafka ]]; then
			kafka_format "$CLUSTER_ID" "$T/node$n/server.properties" "$T/node$n/format.out"
		fi
	done
	for n in $CONTROLLER 1 2 3; do node_start "$n"; done
	for n in 1 2 3; do node_ready "$n"; done
}

cluster_stop() {
	local n
	for n in 1 2 3 $CONTROLLER; do [[ -d $T/node$n ]] && stop_pidfile "$T/node$n/pid"; done
	return 0
}

bootstrap() { echo "$(node_ip 1):9092,$(node_ip 2):9092,$(node_ip 3):9092"; }

# admin ARGS...: the SysTestAdmin helper (create TOPIC:PARTITIONS:RF[:K=V,...]..., leader TOPIC).
admin() { java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto -Dlog4j2.configurationFile="$T/admin-log4j2.properties" -cp "$WORK/classes:$KAFKA_CP" SysTestAdmin "$(bootstrap)" "$@" 2>>"$T/admin.stderr"; }

# ---- the streams processes --------------------------------------------------------------

# proc_props NAME: writes NAME/streams.properties from the lines on stdin, plus the state
# directory, the bootstrap servers and the group protocol.
proc_props() {
	local d=$T/$1
	mkdir -p "$d"
	{
		echo "state.dir=$d/state"
		echo "bootstrap.servers=$(bootstrap)"
		echo "group.protocol=$PROTOCOL"
		cat
	} >"$d/streams.properties"
	cat >"$d/log4j2.properties" <<LOG4J
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $d/streams.log
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
# the standby test reads the checkpoints written (DEBUG, the Python service's level)
logger.ckpt.name = org.apache.kafka.streams.state.internals.LegacyCheckpointingStateStore
logger.ckpt.level = DEBUG
LOG4J
}

# proc_start NAME CLASS ARGS...: starts a test program (its properties file first) in the
# background, stdout and stderr appended to NAME/streams.stdout and .stderr; pid in NAME/pid.
proc_start() {
	local name=$1 class=$2 d=$T/$1
	shift 2
	java -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile="$d/log4j2.properties" -cp "$WORK/classes:$KAFKA_CP" \
		"org.apache.kafka.streams.tests.$class" "$d/streams.properties" "$@" \
		>>"$d/streams.stdout" 2>>"$d/streams.stderr" </dev/null &
	echo $! >"$d/pid"
	say "$name started ($class $*, pid $!)"
}

# proc_stop NAME [clean]: SIGTERM and wait (120 s, as the Python service), or SIGKILL.
proc_stop() {
	local name=$1 clean=${2:-true} p i
	p=$(cat "$T/$name/pid" 2>/dev/null) || p=
	[[ -n $p ]] || return 0
	if [[ $clean == true ]]; then
		kill -TERM "$p" 2>/dev/null || true
		for ((i = 0; i < 1200; i++)); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$p" 2>/dev/null; then
			fail "$name took too long to exit"
			kill -KILL "$p" 2>/dev/null || true
		fi
	else
		kill -KILL "$p" 2>/dev/null || true
	fi
	wait "$p" 2>/dev/null || true
	: >"$T/$name/pid"
	say "$name stopped ($([[ $clean == true ]] && echo SIGTERM || echo SIGKILL))"
}

# proc_wait NAME SECS: waits for the process to exit by itself.
proc_wait() {
	local name=$1 secs=$2 p deadline
	p=$(cat "$T/$name/pid" 2>/dev/null) || p=
	[[ -n $p ]] || return 0
	deadline=$((SECONDS + secs))
	while kill -0 "$p" 2>/dev/null; do
		((SECONDS < deadline)) || {
			fail "$name did not exit within $secs s"
			return 1
		}
		sleep 1
	done
	wait "$p" 2>/dev/null || true
	: >"$T/$name/pid"
}

procs_stop_all() {
	local f
	for f in "$T"/*/pid; do
		[[ -e $f && $f != "$T"/node* ]] || continue
		[[ $f == "$T"/node*/pid ]] && continue
		stop_pidfile "$f"
	done
	return 0
}

# mark NAME: the current size of NAME's stdout (a Python monitor_log's start).
mark() { stat -c %s "$T/$1/streams.stdout" 2>/dev/null || echo 0; }

# wait_for NAME OFFSET REGEX SECS: waits until NAME's stdout after OFFSET matches REGEX (the
# monitor's wait_until); SECS is multiplied by STREAMS_SLOW.
wait_for() {
	local name=$1 off=$2 re=$3 secs=$(($4 * SLOW)) deadline
	deadline=$((SECONDS + secs))
	until tail -c +$((off + 1)) "$T/$name/streams.stdout" 2>/dev/null | grep -Eq -- "$re"; do
		if ((SECONDS >= deadline)); then
			fail "never saw '$re' on $name within $secs s"
			return 1
		fi
		sleep 0.5
	done
}

# fail MESSAGE: records the test as failed (its first reason) and says why.
fail() {
	say "FAIL: $*"
	[[ -n ${FAILED:-} ]] || FAILED=$*
}

# ---- the tests --------------------------------------------------------------------------

smoke_topics() {
	local rf=$1 parts=$2 extra=${3:-} t out=()
	for t in "${@:4}"; do out+=("$t:$parts:$rf${extra:+:$extra}"); done
	admin create "${out[@]}"
}

# smoke_props GUARANTEE THREADS: StreamsSmokeTestBaseService.prop_file.
smoke_props() {
	cat <<EOF
processing.guarantee=$1
num.stream.threads=$2
replication.factor=3
num.standby.replicas=2
buffered.records.per.partition=100
commit.interval.ms=1000
auto.offset.reset=earliest
acks=all
acceptable.recovery.lag=9223372036854775807
session.timeout.ms=10000
EOF
}

# test_smoke GUARANTEE CRASH: streams_smoke_test.py test_streams.
test_smoke() {
	local guarantee=$1 crash=$2 m
	smoke_topics 1 5 "" echo data min min-suppressed min-raw max sum sws-raw sws-suppressed dif cnt avg wcnt tagg
	local p
	for p in driver p1 p2 p3; do smoke_props "$guarantee" 3 | proc_props $p; done
	local clean=true
	[[ $crash == true ]] && clean=false

	m=$(mark p1)
	proc_start p1 StreamsSmokeTest process
	wait_for p1 "$m" 'REBALANCING -> RUNNING' 60 || return
	proc_start driver StreamsSmokeTest run
	wait_for p1 "$m" 'processed' 30 || return
	grep -q 'Result Verification' "$T/driver/streams.stdout" && { fail "the driver was done before p1 stopped"; return; }
	proc_stop p1 $clean

	m=$(mark p2)
	proc_start p2 StreamsSmokeTest process
	wait_for p2 "$m" 'REBALANCING -> RUNNING' 120 || return
	wait_for p2 "$m" 'processed' 30 || return
	grep -q 'Result Verification' "$T/driver/streams.stdout" && { fail "the driver was done before p2 stopped"; return; }
	proc_stop p2 $clean

	m=$(mark p3)
	proc_start p3 StreamsSmokeTest process
	wait_for p3 "$m" 'REBALANCING -> RUNNING' 120 || return
	wait_for p3 "$m" 'processed' 30 || return

	proc_wait driver 1440 || return
	proc_stop p3
	if [[ $crash == true && $guarantee == at_least_once ]]; then
		grep -Eq 'SUCCESS|PROCESSED-MORE-THAN-GENERATED' "$T/driver/streams.stdout" || fail "no SUCCESS|PROCESSED-MORE-THAN-GENERATED in the driver's output"
	else
		grep -q SUCCESS "$T/driver/streams.stdout" || fail "no SUCCESS in the driver's output"
	fi
	RESULT_LINE=$(grep -E 'ALL-RECORDS-DELIVERED|PROCESSED-(MORE|LESS)-THAN-GENERATED|SUCCESS|FAILURE' "$T/driver/streams.stdout" | tr '\n' ' ')
}

# ---- EOS (streams_eos_test.py) ----

eos_props() {
	cat <<EOF
processing.guarantee=exactly_once_v2
acceptable.recovery.lag=9223372036854775807
session.timeout.ms=10000
EOF
}

# wait_startup NAME OFFSET: the test's wait_for_startup.
wait_startup() {
	wait_for "$1" "$2" 'StateChange: REBALANCING -> RUNNING' 480 &&
		wait_for "$1" "$2" 'processed [0-9]* records from topic' 480
}

# wait_kept NAME OFFSET: wait_startup of a processor that keeps running while another starts
# or stops. With the streams protocol the broker's sticky assignment may leave its tasks as they
# are, and then it never goes through REBALANCING (Kafka 4.4 does that as samsa does: in an
# eos_failure run on Kafka the running p2 kept its two tasks when p3 joined and the test's wait
# never ended); there it must be RUNNING (its last state change) and processing since OFFSET.
wait_kept() {
	if [[ $PROTOCOL == classic ]]; then
		wait_startup "$@"
		return
	fi
	local secs=$((480 * SLOW)) deadline
	deadline=$((SECONDS + secs))
	until grep 'StateChange:' "$T/$1/streams.stdout" 2>/dev/null | tail -n 1 | grep -q -- '-> RUNNING$' &&
		tail -c +$(($2 + 1)) "$T/$1/streams.stdout" | grep -Eq 'processed [0-9]* records from topic'; do
		if ((SECONDS >= deadline)); then
			fail "$1 not RUNNING and processing within $secs s"
			return 1
		fi
		sleep 0.5
	done
}

eos_add() { # add_streams P
	local m
	m=$(mark "$1")
	# ducktape's Service.start cleans the node first: the state directory goes, except
	# processor1's (clean_node_enabled = False while the test runs).
	[[ $1 == p1 ]] || rm -rf "$T/$1/state"
	proc_start "$1" StreamsEosTest "$EOS_CMD"
	wait_startup "$1" "$m"
}
eos_add2() { # add_streams2 RUNNING P
	local m
	m=$(mark "$1")
	eos_add "$2" && wait_kept "$1" "$m"
}
eos_add3() { # add_streams3 RUNNING1 RUNNING2 P
	local m
	m=$(mark "$1")
	eos_add2 "$2" "$3" && wait_kept "$1" "$m"
}
eos_stop() { # stop_streams P
	local m
	m=$(mark "$1")
	proc_stop "$1"
	wait_for "$1" "$m" 'StateChange: PENDING_SHUTDOWN -> NOT_RUNNING' 480
}
eos_stop2() { # stop_streams2 KEEP P
	local m
	m=$(mark "$1")
	eos_stop "$2" && wait_kept "$1" "$m"
}
eos_stop3() { # stop_streams3 KEEP1 KEEP2 P
	local m
	m=$(mark "$1")
	eos_stop2 "$2" "$3" && wait_kept "$1" "$m"
}
eos_abort() { # abort_streams KEEP1 KEEP2 P
	local m1 m2
	m1=$(mark "$1")
	m2=$(mark "$2")
	proc_stop "$3" false
	wait_kept "$2" "$m2" && wait_kept "$1" "$m1"
}
# test_eos KIND COMPLEX: run_rebalance or run_failure_and_recovery.
test_eos() {
	local kind=$1 complex=$2 p
	admin create data:5:2 echo:5:2 min:5:2 sum:5:2 repartition:5:2 max:5:2 cnt:5:2
	for p in driver p1 p2 p3 verifier; do eos_props | proc_props $p; done
	EOS_CMD=process
	[[ $complex == true ]] && EOS_CMD=process-complex
	proc_start driver StreamsEosTest run
	if [[ $kind == rebalance ]]; then
		eos_add p1 && eos_add2 p1 p2 && eos_add3 p1 p2 p3 &&
			eos_stop3 p2 p3 p1 && eos_add3 p2 p3 p1 &&
			eos_stop3 p1 p3 p2 && eos_stop2 p1 p3 && eos_stop p1 || return
	else
		eos_add p1 && eos_add2 p1 p2 && eos_add3 p1 p2 p3 &&
			eos_abort p2 p3 p1 && eos_add3 p2 p3 p1 &&
			eos_abort p2 p3 p1 && eos_add3 p2 p3 p1 &&
			eos_abort p1 p3 p2 && eos_stop2 p1 p3 && eos_stop p1 || return
	fi
	proc_stop driver
	local verify=verify
	[[ $complex == true ]] && verify="verify-complex"
	proc_start verifier StreamsEosTest "$verify"
	proc_wait verifier 1440 || return
	grep -q ALL-RECORDS-DELIVERED "$T/verifier/streams.stdout" || fail "no ALL-RECORDS-DELIVERED in the verifier's output"
	RESULT_LINE=$(grep -E 'ALL-RECORDS-DELIVERED|FAIL|Exception' "$T/verifier/streams.stdout" | head -3 | tr '\n' ' ')
}

# ---- broker bounce (streams_broker_bounce_test.py) ----

bounce_topics=(echo data min max sum dif cnt avg wcnt tagg)

# leader_of TOPIC: the node leading partition 0.
leader_of() { admin leader "$1" | sed -n 's/^LEADER //p' | grep .; }

# auto_topics are the topics of the smoke test that the Python test does not create: the
# driver writes `fk` and the processor the others, and the brokers auto-create them with
# default.replication.factor (1, Kafka's default, which kafkatest's kafka.properties keeps).
auto_topics=(fk min-raw sws-raw min-suppressed sws-suppressed)

# lost_with NODE: the partitions of auto_topics whose only replica is on NODE (printed, one
# a line); a node stopped for good takes them with it, on any broker.
lost_with() {
	admin replicas "${auto_topics[@]}" >"$T/auto-topics.txt"
	say "auto-created topics (partition replicas): $(sed -n 's/^REPLICAS //p' "$T/auto-topics.txt" | tr '\n' ' ')" >&2
	awk -v n="$1" '$1 == "REPLICAS" && $3 == n { print $2 }' "$T/auto-topics.txt"
}

# test_bounce MODE THREADS|many: test_broker_type_bounce (leader) or test_many_brokers_bounce.
#
# In the modes that stop a node for good (the shutdowns, and every many_* mode: the Python
# test's fail_many_brokers never restarts the node), a single-replica partition of
# auto_topics on that node is lost with it, on any broker. With `fk-0` the driver retries its
# sends until it is killed: the Python test hangs until ducktape's timeout. A lost
# `*-suppressed` or `*-raw` partition may not matter (the driver may have read it already:
# many_clean_bounce/streams passed so in session 33). The run goes on; when such a partition
# is lost, the driver gets 10 minutes (x STREAMS_SLOW/4) instead of 24, and a failure names
# the partitions (HAZARD).
test_bounce() {
	local mode=$1 threads=$2 t p lost="" wait_secs=1440
	local -a specs=()
	for t in "${bounce_topics[@]}"; do specs+=("$t:3:3:min.insync.replicas=2"); done
	specs+=("__consumer_offsets:50:3:min.insync.replicas=2")
	admin create "${specs[@]}"
	local n=3
	[[ $threads == many ]] && n=3
	smoke_props at_least_once "$n" | proc_props driver
	smoke_props at_least_once "$n" | proc_props p1
	proc_start driver StreamsSmokeTest run
	proc_start p1 StreamsSmokeTest process
	sleep 120 # the test's sleep_time_secs: a fixed point of the run, not a wait for a condition
	if [[ $threads == many ]]; then
		# fail_many_brokers(num_failures=2): range(0, 1), the first node only.
		lost=$(lost_with 1 | tr '\n' ' ')
		case $mode in
		clean_shutdown | clean_bounce) node_signal 1 TERM ;;
		*) node_signal 1 KILL ;;
		esac
	else
		t=${bounce_topics[RANDOM % ${#bounce_topics[@]}]}
		local leader i
		case $mode in
		clean_shutdown | hard_shutdown)
			leader=$(leader_of "$t") || { fail "no leader of $t"; return; }
			say "leader of $t-0: node $leader"
			lost=$(lost_with "$leader" | tr '\n' ' ')
			node_signal "$leader" "$([[ $mode == clean_shutdown ]] && echo TERM || echo KILL)"
			;;
		clean_bounce | hard_bounce)
			for ((i = 0; i < 5; i++)); do
				leader=$(leader_of "$t") || { fail "no leader of $t"; return; }
				say "bounce $((i + 1)): leader of $t-0 is node $leader"
				node_signal "$leader" "$([[ $mode == clean_bounce ]] && echo TERM || echo KILL)"
				node_start "$leader"
				node_ready "$leader" || { fail "node $leader did not come back"; return; }
			done
			;;
		esac
	fi
	if [[ -n $lost ]]; then
		say "test hazard: ${lost}lost with the stopped node (auto-created with one replica)"
		wait_secs=$((150 * SLOW))
	fi
	if ! proc_wait driver "$wait_secs"; then
		[[ -z $lost ]] || FAILED="HAZARD: ${lost}had its only replica on the stopped node; $FAILED"
		return
	fi
	proc_stop p1
	grep -q SMOKE-TEST-CLIENT-CLOSED "$T/p1/streams.stdout" || fail "no SMOKE-TEST-CLIENT-CLOSED in the processor's output"
	RESULT_LINE=$(grep -E 'ALL-RECORDS-DELIVERED|PROCESSED-MORE-THAN-GENERATED|PROCESSED-LESS-THAN-GENERATED|SUCCESS|FAILURE' "$T/driver/streams.stdout" | tr '\n' ' ')
	# The Python test records these lines as its result; it passes when both greps find a line.
	# Here a run passes only when every record was delivered and the logic checks succeeded.
	grep -Eq 'ALL-RECORDS-DELIVERED|PROCESSED-MORE-THAN-GENERATED' "$T/driver/streams.stdout" || fail "records lost: ${RESULT_LINE:-no delivery line}"
	grep -q SUCCESS "$T/driver/streams.stdout" || fail "no SUCCESS in the driver's output"
}

# ---- standby replicas (streams_standby_replica_test.py) ----

# standby_wait NAME REGEX [LINES]: wait_for_verification: at least LINES (default 1) lines of
# NAME's whole stdout match (60 s in the test).
standby_wait() {
	local name=$1 re=$2 lines=${3:-1} deadline=$((SECONDS + 60 * SLOW)) c
	while :; do
		c=$(grep -Ec -- "$re" "$T/$name/streams.stdout" 2>/dev/null) || c=0
		((c >= lines)) && return 0
		if ((SECONDS >= deadline)); then
			fail "$name: $c of $lines lines '$re' after $((60 * SLOW)) s"
			return 1
		fi
		sleep 0.5
	done
}

# standby_consume TOPIC N: assert_consume: N records read from TOPIC (60 s in the test).
standby_consume() {
	local got
	got=$(java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile="$T/admin-log4j2.properties" -cp "$KAFKA_CP" \
		org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$(bootstrap)" \
		--topic "$1" --from-beginning --max-messages "$2" --timeout-ms $((60000 * SLOW)) \
		--group stream-broker-resilience-verify-consumer 2>>"$T/consumer.stderr" | wc -l)
	((got >= $2)) || fail "$got of $2 records read from $1"
}

# test_standby: test_standby_tasks_rebalance. The standby assignment of a streams group is the
# broker's (group.streams.num.standby.replicas, set to the clients' 1 for that protocol).
test_standby() {
	local p n=300000
	admin create standbyTaskSource1:6:1 standbyTaskSink1:1:1 standbyTaskSink2:1:1
	local configs="consumer.max.poll.interval.ms=50000,producer.retries=2,producer.request.timeout.ms=15000,producer.max.block.ms=30000,sourceTopic=standbyTaskSource1,sinkTopic1=standbyTaskSink1,sinkTopic2=standbyTaskSink2"
	[[ $PROTOCOL == classic ]] && configs+=",internal.task.assignor.class=org.apache.kafka.streams.processor.internals.assignment.LegacyStickyTaskAssignor"
	for p in p1 p2 p3; do proc_props $p </dev/null; done
	mkdir -p "$T/producer"
	echo "retries=10" >"$T/producer/producer.properties"
	java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile="$T/admin-log4j2.properties" -cp "$KAFKA_CP" \
		org.apache.kafka.tools.VerifiableProducer --bootstrap-server "$(bootstrap)" --topic standbyTaskSource1 \
		--max-messages $n --throughput 15000 --acks -1 --repeating-keys 6 \
		--producer.config "$T/producer/producer.properties" >"$T/producer/streams.stdout" 2>"$T/producer/streams.stderr" </dev/null &
	echo $! >"$T/producer/pid"
	local A6='ACTIVE_TASKS:6 STANDBY_TASKS:0' A3='ACTIVE_TASKS:3 STANDBY_TASKS:3' A2='ACTIVE_TASKS:2 STANDBY_TASKS:[1-3]'
	proc_start p1 StreamsStandByReplicaTest "$configs"
	standby_wait p1 "$A6" || return
	proc_start p2 StreamsStandByReplicaTest "$configs"
	standby_wait p1 "$A3" && standby_wait p2 "$A3" || return
	proc_start p3 StreamsStandByReplicaTest "$configs"
	standby_wait p1 "$A2" && standby_wait p2 "$A2" && standby_wait p3 "$A2" || return
	proc_stop p1
	standby_wait p2 "$A3" 2 && standby_wait p3 "$A3" || return
	proc_stop p2
	standby_wait p3 "$A6" || return
	proc_start p1 StreamsStandByReplicaTest "$configs"
	standby_wait p1 "$A3" && standby_wait p3 "$A3" 2 || return
	proc_start p2 StreamsStandByReplicaTest "$configs"
	standby_wait p1 "$A2" && standby_wait p2 "$A2" && standby_wait p3 "$A2" 2 || return
	proc_stop p3
	standby_wait p1 "$A3" 2 && standby_wait p2 "$A3" || return
	proc_stop p1
	standby_wait p2 "$A6" || return
	proc_start p3 StreamsStandByReplicaTest "$configs"
	standby_wait p3 "$A3" && standby_wait p2 "$A3" 2 || return
	proc_start p1 StreamsStandByReplicaTest "$configs"
	standby_wait p1 "$A2" && standby_wait p2 "$A2" 2 && standby_wait p3 "$A2" || return
	standby_consume standbyTaskSink1 $n
	standby_consume standbyTaskSink2 $n
	local acked
	acked=$(grep -c '"name":"producer_send_success"' "$T/producer/streams.stdout" || true)
	((acked >= n)) || fail "the producer had $acked of $n records acknowledged"
	stop_pidfile "$T/producer/pid"
	proc_stop p1
	proc_stop p2
	proc_stop p3
	# validateMonotonicCheckpointsCmd: per partition, the offsets of "Assigning and seeking"
	# (no longer logged by 4.4) and "Writing checkpoint" log lines never go back.
	local ckpts=0 c
	for p in p1 p2 p3; do
		c=$(grep -c 'Assigning and seeking\|Writing checkpoint' "$T/$p/streams.log") || c=0
		ckpts=$((ckpts + c))
		if ! { grep -h 'Assigning and seeking\|Writing checkpoint' "$T/$p/streams.log" || true; } |
			sed -e 's/.*{\(.*\)}.*/\1/' -e 's/, /\n/g' -e 's/=/\t/g' | sort --key=1,1 --stable |
			awk -F'\t' 'NF == 2 { if ($1 == k && $2 + 0 < v + 0) { print "ERROR: " $1 " offset regressed from " v " to " $2; bad = 1 } k = $1; v = $2 } END { exit bad }'; then
			fail "$p: a checkpoint offset regressed"
		fi
		if grep -q ERROR "$T/$p/streams.stdout"; then fail "ERROR in $p's output"; fi
	done
	# Kafka Streams 4.4 keeps these stores' offsets without the legacy checkpoint file
	# (LegacyCheckpointingStateStore logs "No legacy checkpoint file found"), so there may be no
	# such line at all; the count is reported.
	RESULT_LINE="$acked records acknowledged; every assignment seen; $ckpts checkpoints monotonic"
}

# run_test NAME: one test on a fresh cluster.
run_test() {
	local name=$1
	case $name in
	smoke_eos_crash) test_smoke exactly_once_v2 true ;;
	smoke_eos) test_smoke exactly_once_v2 false ;;
	smoke_alos_crash) test_smoke at_least_once true ;;
	smoke_alos) test_smoke at_least_once false ;;
	eos_rebalance) test_eos rebalance false ;;
	eos_rebalance_complex) test_eos rebalance true ;;
	eos_failure) test_eos failure false ;;
	eos_failure_complex) test_eos failure true ;;
	bounce_*_[13]) test_bounce "$(sed -E 's/^bounce_(.*)_[13]$/\1/' <<<"$name")" "${name##*_}" ;;
	many_*) test_bounce "${name#many_}" many ;;
	standby) test_standby ;;
	*) fail "unknown test $name" ;;
	esac
}

inner() {
	netns_up
	trap 'exit 143' TERM INT # the EXIT trap stops the processes
	BROKER=$1
	shift
	local tests=("$@") name protocols
	for name in "${tests[@]}"; do
		protocols=$STREAMS_PROTOCOLS
		if [[ $name == */* ]]; then
			protocols=${name#*/}
			name=${name%%/*}
		fi
		for PROTOCOL in $protocols; do
			export T=$WORK/$name-$PROTOCOL
			rm -rf "$T"
			mkdir -p "$T"
			kafka_log4j2 "$T/admin-log4j2.properties" "$T/admin.log"
			FAILED="" RESULT_LINE=""
			local start=$SECONDS
			NAME=$name
			say "=== $name ($PROTOCOL) in $T"
			trap 'procs_stop_all; cluster_stop' EXIT
			if cluster_start; then
				run_test "$name" || true
			else
				fail "the cluster did not start"
			fi
			procs_stop_all
			cluster_stop
			trap - EXIT
			local result=PASS
			[[ -z $FAILED ]] || result=FAIL
			printf '%s\t%s\t%s\t%d\t%s\n' "$name" "$PROTOCOL" "$result" $((SECONDS - start)) \
				"${FAILED:-$RESULT_LINE}" >>"$WORK/results.tsv"
			say "=== $name ($PROTOCOL): $result in $((SECONDS - start)) s ${FAILED:+($FAILED)}"
		done
	done
}

dispatch "$@"

BROKER=${1:-samsa}
(($# >= 1)) && shift
check_broker "$BROKER" "[samsa|kafka] [TEST...]"
export BROKER
# shellcheck disable=SC2206 # the default list is split on purpose
tests=(${@:-$all_tests})
export STREAMS_PROTOCOLS=${STREAMS_PROTOCOLS:-classic streams}

export WORK=${SUITES_WORK:-$(mktemp -d "/tmp/samsa-streams-systests-$BROKER-XXXXXX")}
mkdir -p "$WORK"
say "Kafka Streams' system tests against $BROKER in $WORK"
kafka_classpath
build_samsa "$WORK/samsa" # the readiness probe of both brokers

# The test programs, from Kafka's source tree, compiled against Kafka 4.4's jars.
gitdir=${STREAMS_GIT:-/work/.mirror/apache+kafka/repo}
rm -rf "$WORK/src" "$WORK/classes"
pkg=streams/src/test/java/org/apache/kafka/streams/tests
mkdir -p "$WORK/src"
git -C "$gitdir" archive "${STREAMS_REV:-HEAD}" "$pkg" | tar -x -C "$WORK/src"
git -C "$gitdir" rev-parse "${STREAMS_REV:-HEAD}" >"$WORK/src/.revision"
# groupMembers, added to EosTestDriver: the members of the application's group, classic or streams.
export GROUP_MEMBERS='
    private static java.util.Collection<?> groupMembers(final Admin adminClient) {
        try {
            try {
                return adminClient.describeConsumerGroups(Collections.singleton(EosTestClient.APP_ID))
                    .describedGroups().get(EosTestClient.APP_ID).get(10, TimeUnit.SECONDS).members();
            } catch (final ExecutionException e) {
                if (!(e.getCause() instanceof org.apache.kafka.common.errors.GroupIdNotFoundException)) {
                    throw e;
                }
                return adminClient.describeStreamsGroups(Collections.singleton(EosTestClient.APP_ID))
                    .describedGroups().get(EosTestClient.APP_ID).get(10, TimeUnit.SECONDS).members();
            }
        } catch (final InterruptedException | ExecutionException | java.util.concurrent.TimeoutException e) {
            e.printStackTrace();
            throw new RuntimeException("Unexpected Exception getting group description", e);
        }
    }
'
(
	cd "$WORK/src/$pkg"
	# Tests of the programs and the upgrade tests (which need older Streams jars) are not built.
	rm -f RelationalSmokeTestTest.java SystemTestUtilTest.java StreamsUpgradeTest.java StreamsUpgradeToCooperativeRebalanceTest.java
	sed -i \
		-e 's/org\.apache\.kafka\.common\.utils\.Exit;/org.apache.kafka.common.utils.internals.Exit;/' \
		-e 's/org\.apache\.kafka\.common\.utils\.KafkaThread;/org.apache.kafka.common.utils.internals.KafkaThread;/' \
		-e 's/^import org\.apache\.kafka\.test\.TestUtils;//' \
		-e 's/TestUtils\.tempDirectory()/new java.io.File(System.getProperty("java.io.tmpdir"), "kafka-" + java.util.UUID.randomUUID())/' \
		./*.java
	# The smoke driver's final "flush" records, which close the suppressed windows, carry a
	# timestamp two days ahead, which Kafka 4.0+ brokers reject (log.message.timestamp.after.max.ms
	# is 1 hour by default since 4.0). Kafka fixed its driver the same way (apache/kafka#18830,
	# 2025-02): the generated records are two days in the past, the flush records now.
	perl -0pi -e 's/new ProducerRecord<>\(\s*"(data|fk)",/new ProducerRecord<>("$1", null, System.currentTimeMillis() - Duration.ofDays(2).toMillis(),/g;
		s/System\.currentTimeMillis\(\) \+ Duration\.ofDays\(2\)\.toMillis\(\)/System.currentTimeMillis()/g' SmokeTestDriver.java
	# The EOS verifier waits for the application to be down with Admin.describeConsumerGroups,
	# which fails with GroupIdNotFoundException for a streams group (on Kafka 4.4 as on samsa);
	# then it asks Admin.describeStreamsGroups (Kafka 4.1+) for the members instead.
	perl -0pi -e 's/ConsumerGroupDescription description;(\s*do \{\s*)description = getConsumerGroupDescription\(adminClient\);/java.util.Collection<?> description;$1description = groupMembers(adminClient);/;
		s/description\.members\(\)\.isEmpty\(\)/description.isEmpty()/g;
		s/\}\s*\z/$ENV{GROUP_MEMBERS}}\n/' EosTestDriver.java
	grep -q 'groupMembers(adminClient)' EosTestDriver.java || die "EosTestDriver: the verifier patch did not apply"
)
mkdir -p "$WORK/src/admin"
cat >"$WORK/src/admin/SysTestAdmin.java" <<'JAVA'
import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.errors.TopicExistsException;

// SysTestAdmin BOOTSTRAP create NAME:PARTITIONS:RF[:K=V,...]... | leader TOPIC | replicas TOPIC...
public class SysTestAdmin {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "120000");
        try (Admin admin = Admin.create(p)) {
            if (args[1].equals("create")) {
                List<NewTopic> topics = new ArrayList<>();
                for (int i = 2; i < args.length; i++) {
                    String[] f = args[i].split(":", 4);
                    NewTopic t = new NewTopic(f[0], Integer.parseInt(f[1]), Short.parseShort(f[2]));
                    if (f.length > 3) {
                        Map<String, String> c = new HashMap<>();
                        for (String kv : f[3].split(",")) c.put(kv.split("=", 2)[0], kv.split("=", 2)[1]);
                        t.configs(c);
                    }
                    topics.add(t);
                }
                for (Map.Entry<String, ? extends org.apache.kafka.common.KafkaFuture<Void>> e : admin.createTopics(topics).values().entrySet()) {
                    try {
                        e.getValue().get(120, TimeUnit.SECONDS);
                    } catch (java.util.concurrent.ExecutionException x) {
                        if (!(x.getCause() instanceof TopicExistsException)) throw x;
                    }
                }
                System.out.println("created " + topics.size() + " topics");
            } else if (args[1].equals("leader")) {
                TopicDescription d = admin.describeTopics(List.of(args[2])).allTopicNames().get(120, TimeUnit.SECONDS).get(args[2]);
                System.out.println("LEADER " + d.partitions().get(0).leader().id());
            } else if (args[1].equals("replicas")) {
                // REPLICAS TOPIC-PARTITION ID,ID... for each existing topic named.
                Set<String> names = new TreeSet<>(Arrays.asList(args).subList(2, args.length));
                names.retainAll(admin.listTopics().names().get(120, TimeUnit.SECONDS));
                for (TopicDescription d : admin.describeTopics(names).allTopicNames().get(120, TimeUnit.SECONDS).values()) {
                    for (org.apache.kafka.common.TopicPartitionInfo pi : d.partitions()) {
                        StringBuilder ids = new StringBuilder();
                        for (org.apache.kafka.common.Node n : pi.replicas()) ids.append(ids.length() > 0 ? "," : "").append(n.id());
                        System.out.println("REPLICAS " + d.name() + "-" + pi.partition() + " " + ids);
                    }
                }
            } else {
                throw new IllegalArgumentException(args[1]);
            }
        }
    }
}
JAVA
mkdir -p "$WORK/classes"
say "compiling the test programs of $(cut -c1-12 "$WORK/src/.revision") against Kafka 4.4's jars"
mapfile -t sources < <(find "$WORK/src" -name '*.java')
javac -nowarn -d "$WORK/classes" -cp "$KAFKA_CP" "${sources[@]}" 2>"$WORK/javac.log" ||
	{
		cat "$WORK/javac.log" >&2
		die "javac failed"
	}

rc=0
in_netns "$(realpath "$0")" "$BROKER" "${tests[@]}" || rc=$?
{
	echo "Kafka Streams system tests: $(broker_version "$BROKER"), programs of Kafka $(cut -c1-12 "$WORK/src/.revision")"
	printf '%-26s %-8s %-5s %6s  %s\n' TEST PROTOCOL RESULT SECS DETAIL
	while IFS=$'\t' read -r n p r s d; do
		printf '%-26s %-8s %-5s %6s  %s\n' "$n" "$p" "$r" "$s" "$d"
	done <"$WORK/results.tsv"
	echo "$(grep -c $'\tPASS\t' "$WORK/results.tsv" || true) pass, $(grep -c $'\tFAIL\t' "$WORK/results.tsv" || true) fail"
} | tee "$WORK/table.txt"
grep -q $'\tFAIL\t' "$WORK/results.tsv" && rc=1
say "files in $WORK"
exit $rc
