#!/usr/bin/env bash
# confluent-go.sh runs confluent-kafka-go's integration tests (kafka/integration, its own module)
# and the tests of its kafka package that want a broker (testconf.json) against samsa or against
# Apache Kafka 4.4, configured as the client's CI configures its Kafka, and prints a table of
# each test's result.
#
#   compat-tests/suites/confluent-go.sh [samsa|kafka] [classic|consumer] [go test flags...]
#
# The sources: confluent-kafka-go $CKGO_VERSION from the Go module proxy (the module bundles a
# prebuilt librdkafka; cgo), plus kafka/integration of the same tag from the git mirror
# (CKGO_REPO; a nested module, so not in the module's zip). Its CI
# (.semaphore/semaphore_integration_commands.sh) runs, in kafka/integration,
#   go test -v -timeout 3600s -run ^TestIntegration$ -docker.needed=true
# which brings up testresources/docker-compose.yaml (the jobs "CGRP classic") or
# testresources/docker-compose-kraft.yaml (the jobs "CGRP consumer", with
# TEST_CONSUMER_GROUP_PROTOCOL=consumer). Here, inside a private network namespace
# (`unshare -n`), the same brokers on the same ports, and a testconf.json naming them (the
# tests' other way to find a cluster; the docker flags are not passed):
#
#   classic   docker-compose.yaml: two single-node clusters. "kafka" (PLAINTEXT, advertised
#             localhost:9092 and kafka:19092, the authorizer with super user User:ANONYMOUS) and
#             "kafka_auth" (SASL_PLAINTEXT PLAIN on localhost:9093, users from kafka_jaas.conf
#             through KAFKA_OPTS, super user User:admin, allow.everyone.if.no.acl.found=true).
#             The compose's KAFKA_* environment is given to samsa as is, with the changes a user
#             moving the ZooKeeper-era cp-kafka 7.9 file to KRaft makes: no KAFKA_ZOOKEEPER_*,
#             process.roles, node.id, a CONTROLLER listener (PLAINTEXT) and its voter, and
#             Kafka 4's StandardAuthorizer for the removed AclAuthorizer. The controller
#             listener's principal (ANONYMOUS) is added to the SASL cluster's super users, as a
#             ZooKeeper-era cluster had no such listener. Kafka gets the same settings as a
#             server.properties (the images' KAFKA_X_Y -> x.y).
#   consumer  docker-compose-kraft.yaml: one node with kraft/server.properties and the JAAS file
#             (num.partitions=4, the authorizer, group.coordinator.rebalance.protocols=
#             classic,consumer, ...). The tests reach its DOCKER listeners (PLAINTEXT and
#             SASL_PLAINTEXT) as localhost:9092/9093, as the compose publishes them; its PLAINTEXT
#             and SASL_PLAINTEXT listeners (kafka:9092/9093 in the compose network) are
#             kafka:19092/19093 here, since two listeners of one node may not share a port on
#             either broker. One change for both brokers: the controller listener is PLAINTEXT
#             (the file maps it to SASL_PLAINTEXT, which samsa refuses to start with; see
#             FINDINGS.md), with User:ANONYMOUS a super user.
#
# "localhost" is 127.0.0.1, "kafka" (the compose service) 127.0.0.2 and "kafka_auth" 127.0.0.3
# in the namespace.
# Then, with testconf.json (Brokers localhost:9092, BrokersSasl localhost:9093, testuser/
# testpass PLAIN, as the docker mode's defaults) in each package directory:
#   - kafka/integration's test binary, -test.v -test.timeout 3600s (every test of the
#     package: TestIntegration's suite, which the CI selects, and the transactional and mock
#     tests beside it; the script's go test flags, such as -run, go to this binary only);
#   - the kafka package's test binary, -test.timeout 180s (its CI's flags): all its tests,
#     as its CI runs them; TestAdminAPIWithDefaultValue and TestConsumerCloseForStaticMember
#     read testconf.json and use the broker (they skip in its CI, which has none there).
#
# Environment:
#   SUITES_WORK   scratch directory (default: a new /tmp/samsa-ckgo-XXXXXX, kept): src/,
#                 integration.json and kafka.json (test2json), test.json (both, for the
#                 table), table.txt, kafka/ and kafka_auth/ (or node/):
#                 data, broker.log
#   CKGO_VERSION  the confluent-kafka-go tag (default v2.15.0)
#   CKGO_REPO     its git mirror (default /work/.mirror/confluentinc+confluent-kafka-go/repo)
#
# Needs: go, gcc (cgo), git, unshare and ip (root); for kafka: java, mvn, python3 (kafka-ref.sh).
# Exit status: 0 when every test that ran passed.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CKGO_VERSION=${CKGO_VERSION:-v2.15.0}
CKGO_REPO=${CKGO_REPO:-/work/.mirror/confluentinc+confluent-kafka-go/repo}
CLUSTER_ID=Y2tnby1pbnRlZ3JhdGlvbg # base64url of "ckgo-integration"; any fixed id will do

# node_names prints the profile's nodes.
node_names() {
	case $PROFILE in
	classic) echo kafka kafka_auth ;;
	consumer) echo node ;;
	esac
}

# node_env prints node NAME's KAFKA_* environment (classic: the compose's, translated to KRaft).
node_env() {
	local name=$1
	case $name in
	kafka)
		cat <<EOF
KAFKA_BROKER_ID=0
KAFKA_NODE_ID=0
KAFKA_PROCESS_ROLES=broker,controller
KAFKA_CONTROLLER_QUORUM_VOTERS=0@127.0.0.2:19093
KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER
KAFKA_LISTENERS=PLAINTEXT://127.0.0.2:19092,PLAINTEXT_HOST://127.0.0.1:9092,CONTROLLER://127.0.0.2:19093
KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=PLAINTEXT:PLAINTEXT, PLAINTEXT_HOST:PLAINTEXT, CONTROLLER:PLAINTEXT
KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.2:19092, PLAINTEXT_HOST://localhost:9092
KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT
KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=1
KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=1
KAFKA_TRANSACTION_STATE_LOG_MIN_ISR=1
KAFKA_AUTHORIZER_CLASS_NAME=org.apache.kafka.metadata.authorizer.StandardAuthorizer
KAFKA_SUPER_USERS=User:ANONYMOUS
KAFKA_LOG_DIRS=$WORK/kafka/data
EOF
		;;
	kafka_auth)
		cat <<EOF
KAFKA_BROKER_ID=0
KAFKA_NODE_ID=0
KAFKA_PROCESS_ROLES=broker,controller
KAFKA_CONTROLLER_QUORUM_VOTERS=0@127.0.0.3:29093
KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER
KAFKA_LISTENERS=SASL_PLAINTEXT://127.0.0.1:9093,CONTROLLER://127.0.0.3:29093
KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT
KAFKA_ADVERTISED_LISTENERS=SASL_PLAINTEXT://localhost:9093
KAFKA_SASL_ENABLED_MECHANISMS=PLAIN
KAFKA_INTER_BROKER_LISTENER_NAME=SASL_PLAINTEXT
KAFKA_SASL_MECHANISM_INTER_BROKER_PROTOCOL=PLAIN
KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=1
KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=1
KAFKA_TRANSACTION_STATE_LOG_MIN_ISR=1
KAFKA_AUTHORIZER_CLASS_NAME=org.apache.kafka.metadata.authorizer.StandardAuthorizer
KAFKA_SUPER_USERS=User:admin;User:ANONYMOUS
KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND=true
KAFKA_OPTS=-Djava.security.auth.login.config=$JAAS
KAFKA_LOG_DIRS=$WORK/kafka_auth/data
EOF
		;;
	node)
		echo "KAFKA_OPTS=-Djava.security.auth.login.config=$JAAS"
		;;
	esac
}

# node_properties prints node NAME's server.properties: kraft/server.properties (consumer) with
# the changes the header names, or the environment turned into settings as the images do.
node_properties() {
	local name=$1 kv k v
	if [[ $name == node ]]; then
		sed -e 's/^controller.quorum.voters=.*/controller.quorum.voters=0@127.0.0.2:38705/' \
			-e 's/CONTROLLER:SASL_PLAINTEXT/CONTROLLER:PLAINTEXT/' \
			-e '/^sasl.mechanism.controller.protocol=/d' \
			-e 's/^super.users=.*/super.users=User:admin;User:ANONYMOUS/' \
			-e 's#^listeners=.*#listeners=PLAINTEXT://127.0.0.2:19092,CONTROLLER://127.0.0.2:38705,SASL_PLAINTEXT://127.0.0.2:19093,DOCKER://127.0.0.1:9092,DOCKER_SASL_PLAINTEXT://127.0.0.1:9093#' \
			-e 's#^advertised.listeners=.*#advertised.listeners=PLAINTEXT://127.0.0.2:19092,SASL_PLAINTEXT://127.0.0.2:19093,DOCKER://localhost:9092,DOCKER_SASL_PLAINTEXT://localhost:9093#' \
			"$WORK/src/kafka/integration/testresources/kraft/server.properties"
		echo "node.id=0"
		echo "log.dirs=$WORK/node/data"
		return
	fi
	while IFS= read -r kv; do
		k=${kv%%=*}
		v=${kv#*=}
		[[ $k == KAFKA_OPTS ]] && continue
		k=${k#KAFKA_}
		k=${k,,}
		k=${k//___/-}
		k=${k//__/@}
		k=${k//_/.}
		k=${k//@/_}
		echo "$k=$v"
	done < <(node_env "$name")
}

# node_start starts node NAME of the broker in the background and writes its pid to NAME/pid.
node_start() {
	local broker=$1 name=$2 d=$WORK/$2
	mkdir -p "$d"
	node_properties "$name" >"$d/server.properties"
	case $broker in
	samsa)
		local -a envs=() args=()
		mapfile -t envs < <(node_env "$name")
		[[ $PROFILE == consumer ]] && args=("$d/server.properties")
		env -i PATH="$PATH" HOME="$HOME" CLUSTER_ID="$CLUSTER_ID" "${envs[@]}" \
			"$WORK/samsa" "${args[@]}" >>"$d/broker.log" 2>&1 </dev/null &
		;;
	kafka)
		kafka_format "$CLUSTER_ID" "$d/server.properties" "$d/format.out"
		kafka_log4j2 "$d/log4j2.properties" "$d/broker.log"
		kafka_broker 768m "$d/server.properties" "$d/log4j2.properties" -Djava.security.auth.login.config="$JAAS" \
			>>"$d/stdout.log" 2>&1 </dev/null &
		;;
	esac
	echo $! >"$d/pid"
}

# node_stop stops node NAME (TERM, KILL after 30 s).
node_stop() { stop_pidfile "$WORK/$1/pid"; }

# nodes_alive fails, with their logs, when a node's process exited.
# shellcheck disable=SC2317 # called by poll_ready
nodes_alive() {
	local name
	local -a logs=() pids=()
	for name in $(node_names); do
		logs+=("$WORK/$name/broker.log" "$WORK/$name/stdout.log")
		pids+=("$WORK/$name/pid")
	done
	pidfiles_alive "${logs[@]}" -- "${pids[@]}"
}

# wait_ready waits until ADDR answers Metadata (with the SASL client settings when asked).
wait_ready() {
	local addr=$1 sasl=$2
	local -a cc=()
	[[ $sasl == 1 ]] && cc=(--command-config "$WORK/sasl.properties")
	poll_ready 300 "$addr" nodes_alive "$WORK/samsa" health -q -b "$addr" --timeout 2s "${cc[@]}"
}

# inner runs inside the network namespace: loopback up, brokers up, tests, brokers down.
inner() {
	local broker=$1
	shift
	netns_up
	stop_all() {
		local name
		for name in $(node_names); do node_stop "$name"; done
	}
	trap stop_all EXIT
	local name
	for name in $(node_names); do node_start "$broker" "$name"; done
	wait_ready 127.0.0.1:9092 0
	wait_ready 127.0.0.1:9093 1

	local -a envs=(GOTRACEBACK=all)
	[[ $PROFILE == consumer ]] && envs+=(TEST_CONSUMER_GROUP_PROTOCOL=consumer)
	local rc=0
	(cd "$WORK/src/kafka/integration" && env "${envs[@]}" go tool test2json -t -p integration \
		"$WORK/integration.test" -test.v=test2json -test.timeout 3600s "$@") \
		>"$WORK/integration.json" 2>"$WORK/integration.stderr" || rc=$?
	(cd "$WORK/src/kafka" && env "${envs[@]}" go tool test2json -t -p kafka \
		"$WORK/kafka.test" -test.v=test2json -test.timeout 180s) \
		>"$WORK/kafka.json" 2>"$WORK/kafka.stderr" || rc=$?
	stop_all
	return $rc
}

dispatch "$@"

broker=${1:-samsa}
(($# >= 1)) && shift
check_broker "$broker" "[samsa|kafka] [classic|consumer] [go test flags...]"
export PROFILE=${1:-classic}
(($# >= 1)) && shift
case $PROFILE in
classic | consumer) ;;
*)
	echo "usage: $0 [samsa|kafka] [classic|consumer] [go test flags...]" >&2
	exit 2
	;;
esac
# go test flags as the test binary takes them (-run X -> -test.run X).
args=()
for a in "$@"; do
	[[ $a == -* && $a != -test.* ]] && a=-test.${a#-}
	args+=("$a")
done

export WORK=${SUITES_WORK:-$(mktemp -d /tmp/samsa-ckgo-XXXXXX)}
mkdir -p "$WORK"
echo "confluent-go.sh: confluent-kafka-go $CKGO_VERSION's tests ($PROFILE) against $broker in $WORK" >&2

mod=github.com/confluentinc/confluent-kafka-go/v2
dir=$(cd "$WORK" && GOFLAGS= GOWORK=off go mod download -json "$mod@$CKGO_VERSION" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -d $dir ]] || { echo "confluent-go.sh: $mod@$CKGO_VERSION not downloaded" >&2; exit 1; }
rm -rf "$WORK/src" "$WORK/kafka" "$WORK/kafka_auth" "$WORK/node"
cp -r "$dir" "$WORK/src"
chmod -R u+w "$WORK/src"
# File by file: the mirror lacks the tag's largest blobs (librdkafka archives), which
# `git archive` of any path of the tag then fails on.
git -C "$CKGO_REPO" ls-tree -r --name-only "$CKGO_VERSION" kafka/integration | while IFS= read -r f; do
	mkdir -p "$WORK/src/$(dirname "$f")"
	git -C "$CKGO_REPO" show "$CKGO_VERSION:$f" >"$WORK/src/$f"
done
export JAAS=$WORK/src/kafka/integration/testresources/kafka_jaas.conf

# The test binaries, compiled before any broker starts (minutes of both cores; -p 1).
(cd "$WORK/src/kafka/integration" && GOFLAGS=-mod=mod GOWORK=off go mod download)
(cd "$WORK/src/kafka/integration" && GOFLAGS=-mod=readonly GOWORK=off go test -p 1 -c -o "$WORK/integration.test" .)
(cd "$WORK/src/kafka" && GOFLAGS=-mod=readonly GOWORK=off go test -p 1 -c -o "$WORK/kafka.test" .)

# The testconf.json the tests read from their working directory.
for d in "$WORK/src/kafka/integration" "$WORK/src/kafka"; do
	cat >"$d/testconf.json" <<EOF
{
    "Brokers": "localhost:9092",
    "BrokersSasl": "localhost:9093",
    "SaslUsername": "testuser",
    "SaslPassword": "testpass",
    "SaslMechanism": "PLAIN",
    "TopicName": "test",
    "GroupID": "testgroup",
    "PerfMsgCount": 1000000,
    "PerfMsgSize": 100,
    "Config": ["api.version.request=true"]
}
EOF
done
cat >"$WORK/sasl.properties" <<'EOF'
security.protocol=SASL_PLAINTEXT
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="testuser" password="testpass";
EOF

build_samsa "$WORK/samsa" # the readiness probe of both brokers
if [[ $broker == kafka ]]; then
	kafka_classpath
fi

rc=0
in_netns "$HERE/confluent-go.sh" "$broker" "${args[@]}" || rc=$?
# TestIntegration is a testify suite whose tests are its subtests: renamed TestIntegration:X,
# they get a line each in the table (which lists only the subtests that failed).
cat "$WORK/integration.json" "$WORK/kafka.json" 2>/dev/null |
	sed 's#"Test":"TestIntegration/#"Test":"TestIntegration:#' >"$WORK/test.json" || true
suite_table "$broker" "$WORK/test.json" "$WORK/table.txt"
echo "confluent-go.sh: exit status $rc; files in $WORK" >&2
exit $rc
