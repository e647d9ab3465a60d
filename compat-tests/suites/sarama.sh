#!/usr/bin/env bash
# sarama.sh runs Sarama's functional tests (github.com/IBM/sarama, functional_*_test.go, build tag
# `functional`) against a five-node samsa cluster or a five-node Apache Kafka 4.4 cluster, and
# prints a table of each test's result.
#
#   compat-tests/suites/sarama.sh [samsa|kafka] [-run REGEX] [go test flags...]
#
# The suite is the one of the Sarama version samsa's go.mod pins, copied from the Go module
# cache. Its CI (`make test_functional`, .github/workflows/fvt.yml) brings up docker-compose.yml:
# five combined broker+controller nodes of its own Kafka image (Dockerfile.kafka and
# entrypoint.sh: Kafka's config/server.properties plus the compose's KAFKA_CFG_* settings), and a
# Toxiproxy container whose proxies kafka1..kafka5 (127.0.0.1:29091-29095) forward to each node's
# LISTENER_LOCAL listener, which advertises localhost:2909N, so the clients' every connection goes
# through a proxy the tests can break. Here, inside a private network namespace (`unshare -n`):
#
#   - node N listens on 127.0.1.N (LISTENER_INTERNAL :9091, LISTENER_LOCAL :2909N, CONTROLLER
#     :9093) and advertises LISTENER_LOCAL://127.0.0.1:2909N (localhost in the compose file);
#   - compat-tests/suites/toxiproxyd serves the Toxiproxy API on 127.0.0.1:8474 with the proxies
#     kafkaN = 127.0.0.1:2909N -> 127.0.1.N:2909N (the part of the API the tests use);
#   - each node gets the same settings on both brokers (broker_properties below): those of the
#     image's server.properties that matter and the compose's (default and internal topics'
#     replication factor 2, broker.rack=N, the RackAwareReplicaSelector, no auto creation,
#     group.initial.rebalance.delay.ms=0);
#   - `go test -tags functional -json` runs with TOXIPROXY_ADDR=http://127.0.0.1:8474 and
#     KAFKA_VERSION=4.3.1 (the compose default and Sarama's MaxVersion), as the suite's
#     "existing environment" mode expects. Its tests that drive docker (stopping brokers, the
#     Java console tools in a container) skip themselves in that mode or fail calling docker.
#     Without a -run, the script selects every test function of the functional_*_test.go
#     files (the suite's Makefile runs the package's unit tests with them).
#
# Environment:
#   SUITES_WORK     scratch directory (default: a new /tmp/samsa-sarama-XXXXXX, kept): src/ (the
#                   copy), test.json, table.txt, nodeN/ (data and broker.log), toxiproxyd.log
#   SUITES_TIMEOUT  go test -timeout (default 30m; the suite's Makefile uses 15m)
#   SARAMA_RACE=1   add -race, as the suite's Makefile does (slower)
#   DEBUG=true      Sarama's own debug log on stderr (test.stderr), as its CI sets it
#
# Needs: go, unshare and ip (root); for kafka: java, mvn, python3 (kafka-ref.sh). Exit status: 0
# when every test that ran passed.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
NODES=5
CLUSTER_ID=p6Dzk8oxS4ee70w-KTnLZA # the compose's KAFKA_CFG_CLUSTER_ID, base64-decoded

# broker_properties prints node N's settings, one key=value a line, for either broker.
broker_properties() {
	local n=$1 voters="" i
	for ((i = 1; i <= NODES; i++)); do
		voters+="${voters:+,}$i@127.0.1.$i:9093"
	done
	cat <<EOF
process.roles=broker,controller
node.id=$n
broker.rack=$n
controller.listener.names=CONTROLLER
controller.quorum.voters=$voters
listeners=LISTENER_INTERNAL://127.0.1.$n:9091,LISTENER_LOCAL://127.0.1.$n:2909$n,CONTROLLER://127.0.1.$n:9093
advertised.listeners=LISTENER_INTERNAL://127.0.1.$n:9091,LISTENER_LOCAL://127.0.0.1:2909$n
listener.security.protocol.map=LISTENER_INTERNAL:PLAINTEXT,LISTENER_LOCAL:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=LISTENER_INTERNAL
log.dirs=$WORK/node$n/data
num.partitions=1
default.replication.factor=2
offsets.topic.replication.factor=2
transaction.state.log.replication.factor=2
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector
delete.topic.enable=true
auto.create.topics.enable=false
group.initial.rebalance.delay.ms=0
EOF
}

# node_start starts node N of the broker in the background (it outlives the caller, which
# may be the docker shim) and writes its pid to nodeN/pid. The log is appended to.
node_start() {
	local broker=$1 n=$2
	# A running node stays as it is, as `docker compose start` leaves a running container
	# (TestConsumerFetchFollowerFailover starts its follower again in a cleanup after
	# starting it itself: a second process would orphan the first).
	if [[ -s $WORK/node$n/pid ]] && kill -0 "$(cat "$WORK/node$n/pid")" 2>/dev/null; then
		return 0
	fi
	case $broker in
	samsa)
		local -a ov=()
		local kv
		while IFS= read -r kv; do ov+=(--override "$kv"); done <"$WORK/node$n/server.properties"
		env -i PATH="$PATH" HOME="$HOME" CLUSTER_ID="$CLUSTER_ID" \
			"$WORK/samsa" "${ov[@]}" >>"$WORK/node$n/broker.log" 2>&1 </dev/null &
		;;
	kafka)
		kafka_log4j2 "$WORK/node$n/log4j2.properties" "$WORK/node$n/broker.log"
		kafka_broker 768m "$WORK/node$n/server.properties" "$WORK/node$n/log4j2.properties" \
			>>"$WORK/node$n/stdout.log" 2>&1 </dev/null &
		;;
	esac
	echo $! >"$WORK/node$n/pid"
}

# node_stop stops node N (TERM, KILL after 30 s), as `docker compose stop` does.
node_stop() { stop_pidfile "$WORK/node$1/pid"; }

# docker_shim is the `docker` command the tests find first in PATH: it does the
# `docker compose` calls Sarama's tests make against their compose project on this cluster.
#   compose stop kafka-N | compose start kafka-N    stop or start node N
#   compose logs [--since T] kafka-N                node N's whole log (no time filter)
#   compose exec -T kafka-N /opt/kafka-V/bin/TOOL.sh ARGS
#                                                   Kafka 4.4's TOOL (kafka-ref.sh tool), with
#                                                   kafka-M:9091 in ARGS as node M's address
# Anything else fails.
docker_shim() {
	[[ ${1:-} == compose ]] || { echo "docker shim: only docker compose" >&2; return 1; }
	shift
	local cmd=${1:-}
	shift || true
	case $cmd in
	stop | start)
		local s
		for s in "$@"; do
			[[ $s =~ ^kafka-([1-5])$ ]] || { echo "docker shim: unknown service $s" >&2; return 1; }
			if [[ $cmd == stop ]]; then
				node_stop "${BASH_REMATCH[1]}"
			else
				node_start "$SHIM_BROKER" "${BASH_REMATCH[1]}"
			fi
		done
		;;
	logs)
		local s=${*: -1}
		[[ $s =~ ^kafka-([1-5])$ ]] || { echo "docker shim: unknown service $s" >&2; return 1; }
		cat "$WORK/node${BASH_REMATCH[1]}/broker.log"
		;;
	exec)
		[[ ${1:-} == -T ]] && shift
		shift # the service: the tools run here
		local tool a
		tool=$(basename "$1" .sh)
		shift
		local -a args=()
		for a in "$@"; do
			[[ $a =~ ^kafka-([1-5]):9091$ ]] && a=127.0.1.${BASH_REMATCH[1]}:9091
			args+=("$a")
		done
		exec "$ROOT/compat-tests/kafka-ref/kafka-ref.sh" tool "$tool" "${args[@]}"
		;;
	*)
		echo "docker shim: docker compose $cmd is not supported" >&2
		return 1
		;;
	esac
}

# inner runs inside the network namespace: loopback up, cluster and proxy up, tests, all down.
inner() {
	local broker=$1
	shift
	netns_up
	proxy_pid="" # global: the EXIT trap runs after inner returned
	stop_all() {
		local n
		for ((n = 1; n <= NODES; n++)); do node_stop "$n"; done
		if [[ -n $proxy_pid ]]; then
			kill -TERM "$proxy_pid" 2>/dev/null || true
			wait "$proxy_pid" 2>/dev/null || true
			proxy_pid=""
		fi
	}
	trap stop_all EXIT

	local n
	for ((n = 1; n <= NODES; n++)); do
		mkdir -p "$WORK/node$n"
		broker_properties "$n" >"$WORK/node$n/server.properties"
		if [[ $broker == kafka ]]; then
			kafka_format "$CLUSTER_ID" "$WORK/node$n/server.properties" "$WORK/node$n/format.out"
		fi
	done
	# Every node formatted first: a Kafka node gives up when no quorum answers its
	# registration within a minute, and a format is a JVM start.
	for ((n = 1; n <= NODES; n++)); do node_start "$broker" "$n"; done
	local -a proxies=()
	for ((n = 1; n <= NODES; n++)); do
		proxies+=(-proxy "kafka$n=127.0.0.1:2909$n=127.0.1.$n:2909$n")
	done
	"$WORK/toxiproxyd" -api 127.0.0.1:8474 "${proxies[@]}" >"$WORK/toxiproxyd.log" 2>&1 &
	proxy_pid=$!

	# Ready: every node answers Metadata listing itself, through its proxy (300 s in all).
	# shellcheck disable=SC2317 # alive is called by poll_ready
	alive() { pidfiles_alive "$WORK"/node*/broker.log "$WORK/toxiproxyd.log" -- "+$proxy_pid" "$WORK"/node*/pid; }
	local start=$SECONDS
	for ((n = 1; n <= NODES; n++)); do
		poll_ready $((300 - (SECONDS - start))) "node $n" alive \
			"$WORK/samsa" health -q -b "127.0.0.1:2909$n" --node-id "$n" --timeout 2s
	done

	local -a flags=(-tags functional -json -count=1 -timeout "${SUITES_TIMEOUT:-30m}")
	[[ ${SARAMA_RACE:-0} == 1 ]] && flags+=(-race)
	local rc=0
	(cd "$WORK/src" && env PATH="$WORK/bin:$PATH" GOFLAGS=-mod=readonly GOPROXY=off GOWORK=off \
		TOXIPROXY_ADDR=http://127.0.0.1:8474 KAFKA_VERSION=4.3.1 \
		go test "${flags[@]}" "$@" .) >"$WORK/test.json" 2>"$WORK/test.stderr" || rc=$?
	stop_all
	return $rc
}

dispatch "$@"

broker=${1:-samsa}
(($# >= 1)) && shift
check_broker "$broker" "[samsa|kafka] [-run REGEX] [go test flags...]"
args=("$@")
has_run=0
for a in "${args[@]}"; do [[ $a == -run || $a == -run=* ]] && has_run=1; done

export WORK=${SUITES_WORK:-$(mktemp -d /tmp/samsa-sarama-XXXXXX)}
mkdir -p "$WORK"
echo "sarama.sh: Sarama's functional tests against $broker in $WORK" >&2

rm -rf "$WORK"/node*
copy_module github.com/IBM/sarama "$WORK/src"
if ((!has_run)); then
	# Every test function of the functional_*_test.go files (not all are named TestFunc*).
	names=$(grep -ho '^func Test[A-Za-z0-9_]*(t \*testing.T)' "$WORK"/src/functional_*_test.go |
		sed -e 's/^func //' -e 's/(.*//' | sort -u | paste -sd'|')
	args=(-run "^($names)\$" "${args[@]}")
fi
# Compile the test binary before any broker starts (the compile is minutes of both cores).
(cd "$WORK/src" && GOFLAGS=-mod=readonly GOWORK=off go test -c -tags functional -o "$WORK/sarama.test" .)

build_samsa "$WORK/samsa" # the readiness probe of both brokers
(cd "$ROOT" && go build -o "$WORK/toxiproxyd" ./compat-tests/suites/toxiproxyd)
if [[ $broker == kafka ]]; then
	kafka_classpath
fi

# The tests' `docker compose` calls go to docker_shim.
docker_shim_install "$WORK/bin/docker" "$HERE/sarama.sh" WORK="$WORK" SHIM_BROKER="$broker" KAFKA_CP="${KAFKA_CP:-}"

rc=0
in_netns "$HERE/sarama.sh" "$broker" "${args[@]}" || rc=$?
suite_table "$broker" "$WORK/test.json" "$WORK/table.txt"
echo "sarama.sh: go test exit status $rc; files in $WORK" >&2
exit $rc
