#!/usr/bin/env bash
# kafka-ref.sh runs Apache Kafka 4.4.0, fetched from Maven Central, beside samsa: the
# reference broker for differential tests, Java-ecosystem tests and benchmarks.
#
#   kafka-ref.sh fetch                      resolve the jars into ~/.m2 (idempotent)
#   kafka-ref.sh classpath                  print the classpath (fetches when needed)
#   kafka-ref.sh start DIR [--nodes 1|3]    format KRaft log dirs and start the node(s)
#                                           on free loopback ports; write DIR/bootstrap,
#                                           DIR/pids, DIR/controllers
#   kafka-ref.sh stop DIR                   stop the processes started in DIR
#   kafka-ref.sh run CLASS [ARGS...]        run a Java main class on the classpath
#   kafka-ref.sh tool NAME [ARGS...]        run a Kafka CLI tool by its script name,
#                                           e.g. tool kafka-topics --bootstrap-server ...
#   kafka-ref.sh tools                      list the tool names
#
# Environment:
#   KAFKA_REF_HEAP_OPTS       broker heap (default "-Xmx1g -Xms1g", as kafka-server-start.sh)
#   KAFKA_REF_START_TIMEOUT   seconds to wait for the cluster to answer (default 120)
#   KAFKA_REF_STOP_TIMEOUT    seconds between TERM and KILL (default 30)
#   KAFKA_REF_CACHE           where the resolved classpath is cached
#                             (default ${XDG_CACHE_HOME:-~/.cache}/samsa-kafka-ref)
#   KAFKA_REF_OVERRIDES       extra server.properties lines, separated by newlines
#   KAFKA_REF_NODE<N>_OVERRIDES  more server.properties lines for node N only (1-based),
#                             after KAFKA_REF_OVERRIDES (e.g. broker.rack)
#   KAFKA_REF_SSL             1: each node also gets a listener named SSL (protocol SSL) on
#                             a free port, its addresses written to DIR/ssl-bootstrap; give
#                             its keystore in KAFKA_REF_OVERRIDES
#                             (listener.name.ssl.ssl.keystore.location=...)
#   KAFKA_REF_TOOL_LOG_LEVEL  log level of tools on stderr (default WARN)
#   KAFKA_REF_OWNER_PID       stop the cluster when this process is gone (a watcher
#                             polls it every second)
#
# The single node runs with samsa's comparison settings (auto-created topics with one
# partition, internal topics with replication factor 1, no initial rebalance delay). The
# three-node cluster keeps Kafka's defaults for internal topics (replication factor 3,
# min.insync.replicas 2 for the transaction log).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
POM=$HERE/pom.xml
CACHE=${KAFKA_REF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/samsa-kafka-ref}
START_TIMEOUT=${KAFKA_REF_START_TIMEOUT:-120}
STOP_TIMEOUT=${KAFKA_REF_STOP_TIMEOUT:-30}
HEAP_OPTS=${KAFKA_REF_HEAP_OPTS:--Xmx1g -Xms1g}
# The JVM flags of Kafka's kafka-run-class.sh for the broker.
JVM_PERF_OPTS="-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true"

die() {
	echo "kafka-ref: $*" >&2
	exit 1
}

need() {
	command -v "$1" >/dev/null 2>&1 || die "$1 not found on PATH"
}

# cp_file prints the path of the cached classpath for the current pom.xml.
cp_file() {
	local sum
	sum=$(sha256sum "$POM" | cut -c1-16)
	echo "$CACHE/classpath-$sum.txt"
}

# cp_valid FILE succeeds when FILE lists jars that all exist.
cp_valid() {
	local f=$1 jar
	[[ -s $f ]] || return 1
	local IFS=:
	for jar in $(cat "$f"); do
		[[ -f $jar ]] || return 1
	done
}

# fetch resolves the jars with Maven, offline first, and caches the classpath.
fetch() {
	local f tmp
	f=$(cp_file)
	cp_valid "$f" && return 0
	need mvn
	need java
	mkdir -p "$CACHE"
	# Parallel test packages may fetch at once: one Maven at a time.
	exec 9>"$CACHE/lock"
	flock 9
	if cp_valid "$f"; then
		exec 9>&-
		return 0
	fi
	tmp=$(mktemp "$CACHE/classpath.XXXXXX")
	if ! mvn -o -B -q -f "$POM" dependency:build-classpath -Dmdep.outputFile="$tmp" >"$CACHE/mvn.log" 2>&1; then
		echo "kafka-ref: resolving Apache Kafka jars with Maven (first run downloads ~150 MB)" >&2
		if ! mvn -B -q -f "$POM" dependency:build-classpath -Dmdep.outputFile="$tmp" >"$CACHE/mvn.log" 2>&1; then
			cat "$CACHE/mvn.log" >&2
			rm -f "$tmp"
			die "Maven could not resolve $POM"
		fi
	fi
	mv "$tmp" "$f"
	exec 9>&-
	cp_valid "$f" || die "classpath $f lists missing jars"
}

classpath() {
	fetch
	cat "$(cp_file)"
}

# free_ports N prints N distinct free loopback TCP ports, one a line, from below
# Linux's ephemeral range (net.ipv4.ip_local_port_range, 32768-60999 by default):
# they are released before Kafka binds them, and a port the kernel picked for a
# bind to port 0 is in that range, where any outgoing connection may take it
# meanwhile, also before a node a test restarts binds it again ("Address
# already in use" under load). Below the range only another listener can.
free_ports() {
	python3 - "$1" <<'EOF'
import random, socket, sys
low, high = 20000, 32000
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        eph = int(f.read().split()[0])
    if eph > low + 1000:
        high = min(high, eph)
except (OSError, ValueError, IndexError):
    pass
got = []
for _ in range(5000):
    if len(got) == int(sys.argv[1]):
        break
    p = random.randrange(low, high)
    if p in got:
        continue
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        got.append(p)
    except OSError:
        pass
    finally:
        s.close()
else:
    raise SystemExit("kafka-ref.sh: no free ports below the ephemeral range")
for p in got:
    print(p)
EOF
}

# api_versions_ok PORT succeeds when the broker on PORT answers an ApiVersions v0
# request with error code 0: the broker is serving requests.
api_versions_ok() {
	local port=$1 reply
	{ exec 8<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || return 1
	# size 10, api key 18, version 0, correlation id 7, null client id
	printf '\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x07\xff\xff' >&8 2>/dev/null || {
		exec 8<&-
		return 1
	}
	reply=$(timeout 5 head -c 10 <&8 | od -An -tx1 | tr -d ' \n') || true
	exec 8<&-
	# size (4 bytes, any), correlation id 7, error code 0
	[[ ${reply:8:12} == 000000070000 ]]
}

# log4j_file PATH LOGFILE writes a log4j2 configuration that logs INFO to LOGFILE.
log4j_file() {
	cat >"$1" <<EOF
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $2
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.state.name = state.change.logger
logger.state.level = WARN
EOF
}

# log4j_stderr PATH LEVEL writes a log4j2 configuration that logs LEVEL to stderr.
log4j_stderr() {
	cat >"$1" <<EOF
status = warn
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = $2
rootLogger.appenderRef.err.ref = err
EOF
}

# random_uuid prints a Kafka cluster id: 16 random bytes, URL-safe base64, unpadded.
# random_uuid prints a random Kafka Uuid (16 bytes, base64url). One that
# starts with "-" would be read by kafka-storage as an option (a flaky start
# once in 64), so draw again until it does not.
random_uuid() {
	local id
	while :; do
		id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
		[[ $id == -* ]] || break
	done
	echo "$id"
}

start() {
	local dir=${1:-}
	[[ -n $dir ]] || die "usage: start DIR [--nodes 1|3]"
	shift
	local nodes=1
	while (($#)); do
		case $1 in
		--nodes)
			nodes=${2:-}
			shift 2
			;;
		--nodes=*)
			nodes=${1#--nodes=}
			shift
			;;
		*) die "start: unknown option $1" ;;
		esac
	done
	[[ $nodes =~ ^[1-9]$ ]] || die "start: --nodes must be 1..9"
	need java
	need python3
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	[[ -e $dir/pids ]] && die "$dir/pids exists: stop that cluster first"
	local cp
	cp=$(classpath)

	local -a ports bports cports sports
	mapfile -t ports < <(free_ports $((3 * nodes)))
	local i voters="" bootstrap="" ssl_bootstrap=""
	for ((i = 0; i < nodes; i++)); do
		bports[i]=${ports[3 * i]}
		cports[i]=${ports[3 * i + 1]}
		sports[i]=${ports[3 * i + 2]}
		voters+="${voters:+,}$((i + 1))@127.0.0.1:${cports[i]}"
		bootstrap+="${bootstrap:+,}127.0.0.1:${bports[i]}"
		ssl_bootstrap+="${ssl_bootstrap:+,}127.0.0.1:${sports[i]}"
	done
	local rf=3 minisr=2
	if ((nodes < 3)); then
		rf=1
		minisr=1
	fi
	local cluster_id
	cluster_id=$(random_uuid)
	echo "$cluster_id" >"$dir/cluster-id"

	# Write each node's configuration, then format all log dirs in parallel.
	local -a fmt_pids
	for ((i = 0; i < nodes; i++)); do
		local nd=$dir/node$((i + 1))
		mkdir -p "$nd"
		local ssl_listener="" ssl_map="" node_over_var="KAFKA_REF_NODE$((i + 1))_OVERRIDES"
		local node_over=${!node_over_var:-}
		if [[ ${KAFKA_REF_SSL:-} == 1 ]]; then
			ssl_listener=",SSL://127.0.0.1:${sports[i]}"
			ssl_map=",SSL:SSL"
		fi
		cat >"$nd/server.properties" <<EOF
# Written by kafka-ref.sh.
process.roles=broker,controller
node.id=$((i + 1))
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:${bports[i]},CONTROLLER://127.0.0.1:${cports[i]}${ssl_listener}
advertised.listeners=PLAINTEXT://127.0.0.1:${bports[i]}${ssl_listener}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT${ssl_map}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$nd/data
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=$rf
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$minisr
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$minisr
group.initial.rebalance.delay.ms=0
${KAFKA_REF_OVERRIDES:-}
${node_over}
EOF
		log4j_file "$nd/log4j2.properties" "$nd/server.log"
		log4j_stderr "$nd/log4j2-tool.properties" WARN
		# shellcheck disable=SC2086
		java -Xmx256m -Dlog4j2.configurationFile="$nd/log4j2-tool.properties" -cp "$cp" \
			kafka.tools.StorageTool format -t "$cluster_id" -c "$nd/server.properties" \
			>"$nd/format.out" 2>&1 &
		fmt_pids[i]=$!
	done
	for ((i = 0; i < nodes; i++)); do
		if ! wait "${fmt_pids[i]}"; then
			cat "$dir/node$((i + 1))/format.out" >&2
			die "formatting node $((i + 1)) failed"
		fi
	done

	# Start the nodes. setsid puts each JVM in its own session, so a ^C to the shell
	# that started it does not reach it; stop is the way to end it.
	: >"$dir/pids.tmp"
	for ((i = 0; i < nodes; i++)); do
		local nd=$dir/node$((i + 1))
		date +%s%N >"$nd/launched-at"
		# shellcheck disable=SC2086
		setsid java $HEAP_OPTS $JVM_PERF_OPTS \
			-Dlog4j2.configurationFile="$nd/log4j2.properties" \
			-Dkafka.logs.dir="$nd" -Dsamsa.kafka.ref="$dir" \
			-cp "$cp" kafka.Kafka "$nd/server.properties" \
			>"$nd/stdout.log" 2>&1 </dev/null &
		echo $! >"$nd/pid"
		echo $! >>"$dir/pids.tmp"
	done
	mv "$dir/pids.tmp" "$dir/pids"
	echo "$bootstrap" >"$dir/bootstrap"
	if [[ ${KAFKA_REF_SSL:-} == 1 ]]; then
		echo "$ssl_bootstrap" >"$dir/ssl-bootstrap"
	fi
	echo "$voters" >"$dir/controllers"

	# Bounded wait: every broker answers ApiVersions and has logged that it started
	# (which Kafka does once the broker is unfenced and serving). nodeN/answered-at
	# records when ApiVersions was first answered (bench/compare.sh reads it with
	# nodeN/launched-at as the start-up time); the poll is every 50 ms.
	local deadline=$((SECONDS + START_TIMEOUT)) pid waiting=$nodes
	local -a ready
	while ((waiting > 0)); do
		for ((i = 0; i < nodes; i++)); do
			[[ -n ${ready[i]:-} ]] && continue
			local nd=$dir/node$((i + 1))
			pid=$(cat "$nd/pid")
			if [[ ! -f $nd/answered-at ]] && api_versions_ok "${bports[i]}"; then
				date +%s%N >"$nd/answered-at"
			fi
			if [[ -f $nd/answered-at ]] && grep -q "Kafka Server started" "$nd/server.log" 2>/dev/null; then
				ready[i]=1
				waiting=$((waiting - 1))
				continue
			fi
			if ! kill -0 "$pid" 2>/dev/null; then
				tail -n 40 "$nd/stdout.log" "$nd/server.log" >&2 2>/dev/null || true
				stop "$dir" >/dev/null 2>&1 || true
				die "node $((i + 1)) (pid $pid) exited during start-up"
			fi
			if ((SECONDS >= deadline)); then
				tail -n 40 "$nd/server.log" >&2 2>/dev/null || true
				stop "$dir" >/dev/null 2>&1 || true
				die "node $((i + 1)) did not start within ${START_TIMEOUT}s"
			fi
		done
		((waiting > 0)) && sleep 0.05
	done
	# With KAFKA_REF_OWNER_PID set (the Go helper sets its own pid), a watcher stops the
	# cluster when that process is gone, so a test binary killed before its cleanup
	# does not leave JVMs behind. It ends by itself once stop has removed DIR/pids.
	if [[ -n ${KAFKA_REF_OWNER_PID:-} ]]; then
		setsid bash -c 'while kill -0 "$1" 2>/dev/null && [[ -f $2/pids ]]; do sleep 1; done
			[[ -f $2/pids ]] && exec "$3" stop "$2"' watch "$KAFKA_REF_OWNER_PID" "$dir" "$HERE/kafka-ref.sh" \
			>>"$dir/watch.log" 2>&1 </dev/null &
	fi
	echo "$bootstrap"
}

# ours PID DIR succeeds when PID is a process that kafka-ref.sh started for DIR
# (a PID the kernel has reused for something else is left alone).
ours() {
	[[ -r /proc/$1/cmdline ]] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "-Dsamsa.kafka.ref=$2 "
}

stop() {
	local dir=${1:-}
	[[ -n $dir ]] || die "usage: stop DIR"
	[[ -d $dir ]] || die "$dir: no such directory"
	dir=$(cd "$dir" && pwd)
	[[ -f $dir/pids ]] || return 0
	local -a pids live
	mapfile -t pids <"$dir/pids"
	local pid
	for pid in "${pids[@]}"; do
		ours "$pid" "$dir" && kill -TERM "$pid" 2>/dev/null || true
	done
	local deadline=$((SECONDS + STOP_TIMEOUT))
	while :; do
		live=()
		for pid in "${pids[@]}"; do
			ours "$pid" "$dir" && live+=("$pid")
		done
		((${#live[@]} == 0)) && break
		if ((SECONDS >= deadline)); then
			echo "kafka-ref: pids ${live[*]} still running after ${STOP_TIMEOUT}s; KILL" >&2
			kill -KILL "${live[@]}" 2>/dev/null || true
			deadline=$((SECONDS + 10))
			STOP_TIMEOUT=0
		fi
		sleep 0.2
	done
	rm -f "$dir/pids"
}

# tool_class NAME prints the main class of Kafka's bin/NAME.sh.
tool_class() {
	case ${1%.sh} in
	kafka-topics) echo org.apache.kafka.tools.TopicCommand ;;
	kafka-configs) echo org.apache.kafka.tools.ConfigCommand ;;
	kafka-console-producer) echo org.apache.kafka.tools.ConsoleProducer ;;
	kafka-console-consumer) echo org.apache.kafka.tools.consumer.ConsoleConsumer ;;
	kafka-console-share-consumer) echo org.apache.kafka.tools.consumer.ConsoleShareConsumer ;;
	kafka-consumer-groups) echo org.apache.kafka.tools.consumer.group.ConsumerGroupCommand ;;
	kafka-share-groups) echo org.apache.kafka.tools.consumer.group.ShareGroupCommand ;;
	kafka-streams-groups) echo org.apache.kafka.tools.streams.StreamsGroupCommand ;;
	kafka-get-offsets) echo org.apache.kafka.tools.GetOffsetShell ;;
	kafka-delete-records) echo org.apache.kafka.tools.DeleteRecordsCommand ;;
	kafka-transactions) echo org.apache.kafka.tools.TransactionsCommand ;;
	kafka-leader-election) echo org.apache.kafka.tools.LeaderElectionCommand ;;
	kafka-reassign-partitions) echo org.apache.kafka.tools.reassign.ReassignPartitionsCommand ;;
	kafka-producer-perf-test) echo org.apache.kafka.tools.ProducerPerformance ;;
	kafka-consumer-perf-test) echo org.apache.kafka.tools.ConsumerPerformance ;;
	kafka-e2e-latency) echo org.apache.kafka.tools.EndToEndLatency ;;
	kafka-verifiable-producer) echo org.apache.kafka.tools.VerifiableProducer ;;
	kafka-verifiable-consumer) echo org.apache.kafka.tools.VerifiableConsumer ;;
	kafka-acls) echo org.apache.kafka.tools.AclCommand ;;
	kafka-broker-api-versions) echo org.apache.kafka.tools.BrokerApiVersionsCommand ;;
	kafka-cluster) echo org.apache.kafka.tools.ClusterTool ;;
	kafka-features) echo org.apache.kafka.tools.FeatureCommand ;;
	kafka-log-dirs) echo org.apache.kafka.tools.LogDirsCommand ;;
	kafka-metadata-quorum) echo org.apache.kafka.tools.MetadataQuorumCommand ;;
	kafka-client-metrics) echo org.apache.kafka.tools.ClientMetricsCommand ;;
	kafka-groups) echo org.apache.kafka.tools.GroupsCommand ;;
	kafka-dump-log) echo org.apache.kafka.tools.DumpLogSegments ;;
	kafka-delegation-tokens) echo org.apache.kafka.tools.DelegationTokenCommand ;;
	kafka-streams-application-reset) echo org.apache.kafka.tools.StreamsResetter ;;
	kafka-storage) echo kafka.tools.StorageTool ;;
	connect-distributed) echo org.apache.kafka.connect.cli.ConnectDistributed ;;
	connect-standalone) echo org.apache.kafka.connect.cli.ConnectStandalone ;;
	*) return 1 ;;
	esac
}

TOOL_NAMES="kafka-topics kafka-configs kafka-console-producer kafka-console-consumer
kafka-console-share-consumer kafka-consumer-groups kafka-share-groups kafka-streams-groups
kafka-get-offsets kafka-delete-records kafka-transactions kafka-leader-election
kafka-reassign-partitions kafka-producer-perf-test kafka-consumer-perf-test kafka-e2e-latency
kafka-verifiable-producer kafka-verifiable-consumer kafka-acls kafka-broker-api-versions
kafka-cluster kafka-features kafka-log-dirs kafka-metadata-quorum kafka-client-metrics
kafka-groups kafka-dump-log kafka-delegation-tokens kafka-streams-application-reset kafka-storage
connect-distributed connect-standalone"

# run CLASS ARGS... runs a main class with the classpath; logs go to stderr at
# KAFKA_REF_TOOL_LOG_LEVEL unless KAFKA_REF_LOG4J names a configuration file.
run() {
	[[ $# -ge 1 ]] || die "usage: run CLASS [ARGS...]"
	local cls=$1
	shift
	need java
	local cp log4j
	cp=$(classpath)
	log4j=${KAFKA_REF_LOG4J:-}
	if [[ -z $log4j ]]; then
		mkdir -p "$CACHE"
		log4j=$CACHE/log4j2-tool-${KAFKA_REF_TOOL_LOG_LEVEL:-WARN}.properties
		[[ -f $log4j ]] || {
			log4j_stderr "$log4j.$$" "${KAFKA_REF_TOOL_LOG_LEVEL:-WARN}"
			mv "$log4j.$$" "$log4j"
		}
	fi
	# shellcheck disable=SC2086
	exec java ${KAFKA_REF_TOOL_OPTS:--Xmx512m} -Djava.awt.headless=true \
		-Dlog4j2.configurationFile="$log4j" -cp "$cp" "$cls" "$@"
}

tool() {
	[[ $# -ge 1 ]] || die "usage: tool NAME [ARGS...] (names: kafka-ref.sh tools)"
	local cls
	cls=$(tool_class "$1") || die "unknown tool $1 (names: kafka-ref.sh tools)"
	shift
	run "$cls" "$@"
}

cmd=${1:-}
shift || true
case $cmd in
fetch) fetch ;;
classpath) classpath ;;
start) start "$@" ;;
stop) stop "$@" ;;
run) run "$@" ;;
tool) tool "$@" ;;
tools) echo $TOOL_NAMES | tr ' ' '\n' ;;
*)
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
