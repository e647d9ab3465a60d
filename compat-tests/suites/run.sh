#!/usr/bin/env bash
# run.sh runs another Kafka client's own integration test suite against samsa or against
# Apache Kafka 4.4 (the reference broker of compat-tests/kafka-ref), and prints a table of
# each test's result.
#
#   compat-tests/suites/run.sh [samsa|kafka] [franz-go|kafka-go] [-run REGEX] [go test flags...]
#
#   franz-go  github.com/twmb/franz-go ./pkg/kgo  (the version samsa's go.mod pins)
#   kafka-go  github.com/segmentio/kafka-go ./... (the version samsa's go.mod pins)
#
# What it does:
#  1. copies the client's module from the Go module cache (read-only there) into a scratch
#     directory and downloads the copy's own test dependencies (`go mod download`, from the
#     Go module proxy);
#  2. builds samsa (or resolves Kafka 4.4's jars with kafka-ref.sh);
#  3. in a private network namespace (`unshare -n`: its own loopback, so the fixed ports
#     the suites dial, 9092-9094, are free whatever else runs on the machine), starts one
#     broker configured as the suite's own CI configures its broker, creates the SASL users
#     the suite logs in with, runs `go test -json` (no -race; packages one at a time), and
#     stops the broker;
#  4. prints one line per test: PASS, FAIL or SKIP (compat-tests/suites/suitetable).
#
# The broker configurations (per suite; the same settings for samsa and Kafka):
#   franz-go  franz-go's .github/workflows/lint-and-test.yml (apache/kafka compose):
#             PLAINTEXT 127.0.0.1:9092, SASL_PLAINTEXT 127.0.0.1:9094 (SCRAM-SHA-256 user
#             testuser/testpass, OAUTHBEARER with unsecured tokens), internal topics RF 1,
#             share.coordinator.state.topic.* RF 1, min ISR 1, 5 partitions,
#             group.share.delivery.count.limit=10; on Kafka also
#             group.coordinator.rebalance.protocols=classic,consumer,share (samsa's
#             setting accepts only classic,consumer today; Kafka 4.4 serves share groups
#             whenever the share.version feature is on, its default). franz-go's five
#             share-group tests skip unless the broker advertises ShareFetch and
#             ShareAcknowledge v2 (run them alone with
#             -run '^(TestShareGroupETL|TestShareGroupAckOnClose|TestShareGroupOffsetsAdmin|TestShareGroup|TestConsumeRegexShareSkipsInternal)$').
#   kafka-go  kafka-go's docker_compose_versions/docker-compose-400.yml (bitnami): PLAINTEXT
#             localhost:9092, SASL_PLAINTEXT localhost:9093 (PLAIN adminplain/admin-secret,
#             SCRAM adminscram256/admin-secret-256 and adminscram512/admin-secret-512),
#             StandardAuthorizer with those super users and allow.everyone.if.no.acl.found,
#             auto topic creation, message.max.bytes=200000000; KAFKA_VERSION=4.0.0 and
#             KAFKA_SKIP_NETTEST=1 as its CI sets them.
#
# Environment:
#   SUITES_WORK      scratch directory (default: a new /tmp/samsa-suites-XXXXXX, kept); it
#                    holds src/ (the copy), test.json, table.txt and broker.log
#   SUITES_TIMEOUT   go test -timeout (default 30m)
#   KGO_TEST_RECORDS franz-go's ETL record count (default here 100000; its own default is
#                    500000)
#   KGO_LOG_LEVEL    franz-go's client log level (default here none: the logs are large)
#
# Needs: go, unshare and ip (root, for the network namespace); for kafka: java, mvn,
# python3 (kafka-ref.sh). Exit status: 0 when every test that ran passed.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	echo "usage: $0 [samsa|kafka] [franz-go|kafka-go] [-run REGEX] [go test flags...]" >&2
	exit 2
}

# inner runs inside the network namespace: loopback up, broker up, tests, broker down.
inner() {
	local broker=$1 suite=$2
	shift 2
	netns_up
	pid=""
	stop_broker() {
		stop_pid "$pid"
		pid=""
	}
	trap stop_broker EXIT

	case $broker in
	samsa)
		local -a senv
		mapfile -t senv < <(samsa_env "$suite")
		env -i PATH="$PATH" HOME="$HOME" "${senv[@]}" \
			"$WORK/samsa" --override "log.dirs=$WORK/data" >"$WORK/broker.log" 2>&1 &
		pid=$!
		;;
	kafka)
		kafka_properties "$suite" >"$WORK/server.properties"
		local -a scram=()
		case $suite in
		franz-go) scram=(--add-scram 'SCRAM-SHA-256=[name=testuser,iterations=4096,password=testpass]') ;;
		kafka-go) scram=(--add-scram 'SCRAM-SHA-256=[name=adminscram256,password=admin-secret-256]'
			--add-scram 'SCRAM-SHA-512=[name=adminscram512,password=admin-secret-512]') ;;
		esac
		kafka_format MkU3OEVBNTcwNTJENDM1Tk "$WORK/server.properties" "$WORK/format.out" "${scram[@]}"
		kafka_log4j2 "$WORK/log4j2.properties" "$WORK/broker.log"
		kafka_broker 1g "$WORK/server.properties" "$WORK/log4j2.properties" >"$WORK/broker.stdout" 2>&1 &
		pid=$!
		;;
	esac

	# Ready: the broker answers Metadata listing itself (node 1) on 9092.
	# shellcheck disable=SC2317 # alive is called by poll_ready
	alive() { pidfiles_alive "$WORK/broker.log" "$WORK/broker.stdout" -- "+$pid"; }
	poll_ready 180 "the $broker broker" alive "$WORK/samsa" health -q -b 127.0.0.1:9092 --node-id 1 --timeout 2s
	if [[ $suite == franz-go ]] && [[ $broker == samsa ]]; then
		# franz-go's CI creates its SCRAM user with kafka-configs after the start; samsa's
		# CLI sends the same AlterUserScramCredentials request.
		"$WORK/samsa" users set testuser --password testpass --mechanism SCRAM-SHA-256 \
			--iterations 4096 -b 127.0.0.1:9092 >/dev/null
	fi

	local -a env=(GOFLAGS=-mod=readonly GOPROXY=off GOWORK=off)
	local pkgs
	case $suite in
	franz-go)
		pkgs=./pkg/kgo/
		env+=(KGO_TEST_RF=1 KGO_SEEDS=127.0.0.1:9092 KGO_TEST_STABLE_FETCH=true
			KGO_TEST_SCRAM_SEEDS=127.0.0.1:9094 KGO_TEST_SCRAM=testuser:testpass
			KGO_TEST_OAUTH_SEEDS=127.0.0.1:9094
			KGO_TEST_RECORDS="${KGO_TEST_RECORDS:-100000}" KGO_LOG_LEVEL="${KGO_LOG_LEVEL:-none}")
		;;
	kafka-go)
		pkgs=./...
		env+=(KAFKA_VERSION=4.0.0 KAFKA_SKIP_NETTEST=1)
		;;
	esac
	local rc=0
	(cd "$WORK/src" && env "${env[@]}" go test -json -count=1 -p 1 -timeout "${SUITES_TIMEOUT:-30m}" \
		"$@" $pkgs) >"$WORK/test.json" 2>"$WORK/test.stderr" || rc=$?
	stop_broker
	return $rc
}

# samsa_env prints samsa's environment block for the suite: the suite CI's compose
# environment, with the image's variable names.
samsa_env() {
	case $1 in
	franz-go)
		cat <<'EOF'
KAFKA_NODE_ID=1
CLUSTER_ID=MkU3OEVBNTcwNTJENDM1Tk
KAFKA_PROCESS_ROLES=controller,broker
KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER
KAFKA_LISTENERS=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,SASL_PLAINTEXT://127.0.0.1:9094
KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
KAFKA_CONTROLLER_QUORUM_VOTERS=1@127.0.0.1:9093
KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094
KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT
KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=1
KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=1
KAFKA_TRANSACTION_STATE_LOG_MIN_ISR=1
KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0
KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR=1
KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR=1
KAFKA_SHARE_COORDINATOR_STATE_TOPIC_NUM_PARTITIONS=5
KAFKA_GROUP_SHARE_DELIVERY_COUNT_LIMIT=10
KAFKA_SASL_ENABLED_MECHANISMS=SCRAM-SHA-256,OAUTHBEARER
KAFKA_LISTENER_NAME_SASL__PLAINTEXT_OAUTHBEARER_SASL_SERVER_CALLBACK_HANDLER_CLASS=org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler
EOF
		;;
	kafka-go)
		cat <<'EOF'
KAFKA_CFG_NODE_ID=1
KAFKA_CFG_PROCESS_ROLES=broker,controller
KAFKA_CFG_CONTROLLER_LISTENER_NAMES=CONTROLLER
KAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAIN:PLAINTEXT,SASL:SASL_PLAINTEXT
KAFKA_CFG_LISTENERS=CONTROLLER://localhost:9094,PLAIN://localhost:9092,SASL://localhost:9093
KAFKA_CFG_ADVERTISED_LISTENERS=PLAIN://localhost:9092,SASL://localhost:9093
KAFKA_CFG_INTER_BROKER_LISTENER_NAME=PLAIN
KAFKA_CFG_SASL_ENABLED_MECHANISMS=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
KAFKA_CFG_CONTROLLER_QUORUM_VOTERS=1@localhost:9094
KAFKA_CFG_ALLOW_EVERYONE_IF_NO_ACL_FOUND=true
KAFKA_CFG_AUTO_CREATE_TOPICS_ENABLE=true
KAFKA_CFG_DELETE_TOPIC_ENABLE=true
KAFKA_CFG_MESSAGE_MAX_BYTES=200000000
KAFKA_CFG_AUTHORIZER_CLASS_NAME=org.apache.kafka.metadata.authorizer.StandardAuthorizer
KAFKA_CFG_SUPER_USERS=User:adminscram256;User:adminscram512;User:adminplain
KAFKA_CFG_GROUP_INITIAL_REBALANCE_DELAY_MS=0
KAFKA_CFG_OFFSETS_TOPIC_REPLICATION_FACTOR=1
KAFKA_CFG_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=1
KAFKA_CFG_TRANSACTION_STATE_LOG_MIN_ISR=1
KAFKA_CLIENT_USERS=adminscram256,adminscram512,adminplain
KAFKA_CLIENT_PASSWORDS=admin-secret-256,admin-secret-512,admin-secret
CLUSTER_ID=MkU3OEVBNTcwNTJENDM1Tk
EOF
		;;
	esac
}

# kafka_properties prints Kafka's server.properties for the suite: the same settings as
# samsa_env, as the image would write them.
kafka_properties() {
	cat <<EOF
process.roles=broker,controller
node.id=1
log.dirs=$WORK/data
controller.listener.names=CONTROLLER
num.partitions=1
group.initial.rebalance.delay.ms=0
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
EOF
	case $1 in
	franz-go)
		cat <<'EOF'
listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,SASL_PLAINTEXT://127.0.0.1:9094
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
controller.quorum.voters=1@127.0.0.1:9093
advertised.listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094
inter.broker.listener.name=PLAINTEXT
group.coordinator.rebalance.protocols=classic,consumer,share
share.coordinator.state.topic.num.partitions=5
group.share.delivery.count.limit=10
sasl.enabled.mechanisms=SCRAM-SHA-256,OAUTHBEARER
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";
EOF
		;;
	kafka-go)
		cat <<'EOF'
listeners=CONTROLLER://localhost:9094,PLAIN://localhost:9092,SASL://localhost:9093
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAIN:PLAINTEXT,SASL:SASL_PLAINTEXT
controller.quorum.voters=1@localhost:9094
advertised.listeners=PLAIN://localhost:9092,SASL://localhost:9093
inter.broker.listener.name=PLAIN
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="adminplain" password="admin-secret" user_adminplain="admin-secret";
listener.name.sasl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
allow.everyone.if.no.acl.found=true
auto.create.topics.enable=true
delete.topic.enable=true
message.max.bytes=200000000
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:adminscram256;User:adminscram512;User:adminplain
EOF
		;;
	esac
}

dispatch "$@"

broker=${1:-samsa}
suite=${2:-franz-go}
(($# >= 2)) && shift 2 || shift $#
case $broker in samsa | kafka) ;; *) usage ;; esac
case $suite in
franz-go) mod=github.com/twmb/franz-go ;;
kafka-go) mod=github.com/segmentio/kafka-go ;;
*) usage ;;
esac

export WORK=${SUITES_WORK:-$(mktemp -d /tmp/samsa-suites-XXXXXX)}
mkdir -p "$WORK"
echo "run.sh: $suite against $broker in $WORK" >&2

rm -rf "$WORK/data"
copy_module "$mod" "$WORK/src"
build_samsa "$WORK/samsa" # the readiness probe and the SCRAM tool of both brokers
if [[ $broker == kafka ]]; then
	kafka_classpath
fi

rc=0
in_netns "$HERE/run.sh" "$broker" "$suite" "$@" || rc=$?
suite_table "$broker" "$WORK/test.json" "$WORK/table.txt"
echo "run.sh: go test exit status $rc; files in $WORK" >&2
exit $rc
