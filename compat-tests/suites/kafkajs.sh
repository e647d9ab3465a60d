#!/usr/bin/env bash
# kafkajs.sh runs KafkaJS's own test suite (jest, the *.spec.js files of github.com/tulios/kafkajs)
# against a three-node samsa cluster or a three-node Apache Kafka 4.4 cluster, each configured as
# KafkaJS's CI configures its brokers, and prints each test's result.
#
#   compat-tests/suites/kafkajs.sh [samsa|kafka] [jest path patterns and flags...]
#   compat-tests/suites/kafkajs.sh samsa src/admin              # one directory
#   compat-tests/suites/kafkajs.sh kafka src/producer/index.spec.js -t 'idempotent'
#   compat-tests/suites/kafkajs.sh table SAMSA/results.json KAFKA/results.json
#
# Not part of CI: the whole suite is about 20 minutes per broker on two cores.
#
# The suite is the KafkaJS repository's HEAD from the git mirror (KAFKAJS_REPO), unpacked once
# into a cache directory with its dev dependencies from the npm registry (`npm install`; the
# repository has a yarn.lock and no package-lock). Its CI (azure-pipelines.yml,
# scripts/testWithKafka.sh) brings up docker-compose.2_4.yml: ZooKeeper and three
# confluentinc/cp-kafka 5.4.2 brokers (ids 0, 1, 2), each with six listeners (PLAINTEXT, SSL,
# SASL_SSL for the other containers on 2909N/2909N+1/2909N+2 and the same three for the host on
# 9092/9093/9094, 9095/9096/9097, 9098/9099/9100, advertised as localhost), the JKS keystore
# and truststore of testHelpers/certs, SASL PLAIN/SCRAM-SHA-256/SCRAM-SHA-512 with the PLAIN
# users of testHelpers/kafka/server-jaas.conf, ACLs on with allow.everyone.if.no.acl.found,
# auto-created topics with two partitions and replication factor 2. It then creates the SCRAM
# user testscram (scripts/createScramCredentials.sh) and the topic test-topic-already-exists
# (scripts/waitForKafka.js), and runs jest with TEST_RETRIES=2 and KAFKA_VERSION=2.4. The tests
# connect to localhost on the fixed ports, so here everything runs inside a private network
# namespace (`unshare -n`): its localhost is the cluster's, never the machine's 127.0.0.1:9092,
# and the two brokers can run at once. The compose's environment, translated as a user moving
# from the cp-kafka image to samsa (or to the apache/kafka image) would (node_env below):
#
#   - ZooKeeper becomes KRaft: process.roles=broker,controller, node.id = the compose's broker
#     id, a CONTROLLER listener on 3909N+...; listeners are given (the cp image derives them from
#     the advertised listeners); the other containers' names (kafka1..3) become 127.0.0.1;
#   - the cp image's KAFKA_SSL_*_FILENAME / *_CREDENTIALS (file names under /etc/kafka/secrets
#     and files holding the passwords) become ssl.*.location and ssl.*.password;
#   - kafka.security.auth.SimpleAclAuthorizer (ZooKeeper's) becomes Kafka 4.4's
#     org.apache.kafka.metadata.authorizer.StandardAuthorizer, with super.users=User:ANONYMOUS:
#     the controllers' requests (Vote, Fetch of the metadata log, broker registration) come from
#     ANONYMOUS on the PLAINTEXT CONTROLLER listener, and Kafka's StandardAuthorizer refuses them
#     (AuthorizerNotReadyException) until the metadata log is loaded unless the principal is a
#     super user, so a KRaft cluster with an authorizer never forms a quorum without it. The
#     suite's ACL tests use the SASL users bob and alice, never ANONYMOUS;
#   - KAFKA_OPTS keeps the JAAS file (samsa reads its KafkaServer section as Kafka does).
#
# samsa gets that environment (KAFKA_* variables); Kafka gets the same settings as
# server.properties, converted as the apache/kafka image converts KAFKA_* variables. The SCRAM
# user and the topic are made with Kafka 4.4's kafka-configs and kafka-topics (kafka-ref.sh tool,
# --bootstrap-server in place of --zookeeper) for both brokers. The one test helper that calls
# docker (testHelpers addPartitions, through scripts/addPartitions.sh) finds a `docker` shim first
# in PATH that runs the same kafka-topics command with Kafka 4.4's tool.
#
# Environment:
#   SUITES_WORK       scratch directory (default: a new /tmp/samsa-kafkajs-BROKER-XXXXXX, kept):
#                     results.json (jest --json), table.txt, jest.log, nodeN/ (data, broker.log)
#   KAFKAJS_REPO      the KafkaJS git directory (default /work/.mirror/tulios+kafkajs/repo)
#   KAFKAJS_CACHE     where the unpacked suite and node_modules are kept
#                     (default ${XDG_CACHE_HOME:-~/.cache}/samsa-kafkajs/<commit>)
#   TEST_RETRIES      jest retries of a failed test (default 2, as KafkaJS's CI)
#   KAFKA_VERSION     the suite's broker version switch (default 4.4; only 0.10/0.11/1.1 matter)
#   JEST_WORKERS      jest --maxWorkers (default 1: the machine is shared)
#   KAFKAJS_OAUTH=1   the CI's OAUTHBEARER job instead (docker-compose.2_4_oauthbearer.yml: SASL
#                     mechanism OAUTHBEARER only, no authorizer, connections.max.reauth.ms=15000;
#                     OAUTHBEARER_ENABLED=1 for jest; without path arguments, the six spec files
#                     of its yarn script test:group:oauthbearer)
#
# Needs: git, node and npm (the registry, first run only), unshare and ip (root), go, java and mvn
# (kafka-ref.sh: the CLI tools for both brokers, and the Kafka broker). Exit status: jest's.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
NODES=3
CLUSTER_ID=kjsNWk3mTEe9Lx1Y2vZbVw

# node_env prints node N's (1..3) environment, one KAFKA_*=value a line: docker-compose.2_4.yml's
# kafkaN translated for KRaft on one host (see the header).
node_env() {
	local n=$1 id=$(($1 - 1)) p=$((9092 + 3 * ($1 - 1))) voters="" i
	for ((i = 0; i < NODES; i++)); do
		voters+="${voters:+,}$i@127.0.0.1:$((39092 + 3 * i))"
	done
	cat <<EOF
KAFKA_NODE_ID=$id
KAFKA_PROCESS_ROLES=broker,controller
KAFKA_CONTROLLER_QUORUM_VOTERS=$voters
KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER
KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT,SSL:SSL,SSL_HOST:SSL,SASL_SSL:SASL_SSL,SASL_SSL_HOST:SASL_SSL,CONTROLLER:PLAINTEXT
KAFKA_LISTENERS=PLAINTEXT://:2$p,PLAINTEXT_HOST://:$p,SSL://:2$((p + 1)),SSL_HOST://:$((p + 1)),SASL_SSL://:2$((p + 2)),SASL_SSL_HOST://:$((p + 2)),CONTROLLER://:3$p
KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:2$p,PLAINTEXT_HOST://localhost:$p,SSL://127.0.0.1:2$((p + 1)),SSL_HOST://localhost:$((p + 1)),SASL_SSL://127.0.0.1:2$((p + 2)),SASL_SSL_HOST://localhost:$((p + 2))
KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT
KAFKA_LOG_DIRS=$WORK/node$n/data
KAFKA_AUTO_CREATE_TOPICS_ENABLE=true
KAFKA_DEFAULT_REPLICATION_FACTOR=2
KAFKA_NUM_PARTITIONS=2
KAFKA_DELETE_TOPIC_ENABLE=true
KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0
KAFKA_SSL_KEYSTORE_LOCATION=$SRC/testHelpers/certs/kafka.server.keystore.jks
KAFKA_SSL_KEYSTORE_PASSWORD=$(cat "$SRC/testHelpers/certs/keystore_creds")
KAFKA_SSL_KEY_PASSWORD=$(cat "$SRC/testHelpers/certs/sslkey_creds")
KAFKA_SSL_TRUSTSTORE_LOCATION=$SRC/testHelpers/certs/kafka.server.truststore.jks
KAFKA_SSL_TRUSTSTORE_PASSWORD=$(cat "$SRC/testHelpers/certs/truststore_creds")
KAFKA_SASL_MECHANISM_INTER_BROKER_PROTOCOL=PLAIN
EOF
	if [[ ${KAFKAJS_OAUTH:-0} == 1 ]]; then
		# docker-compose.2_4_oauthbearer.yml: OAUTHBEARER only, no authorizer, re-authentication
		# every 15 s. Its cp-kafka 5.4 validates tokens with Kafka's unsecured validator by
		# default; samsa wants that development-only validator named, so both get it by name.
		local l
		for l in SASL__SSL SASL__SSL__HOST; do
			echo "KAFKA_LISTENER_NAME_${l}_OAUTHBEARER_SASL_SERVER_CALLBACK_HANDLER_CLASS=org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"
		done
		cat <<EOF
KAFKA_SASL_ENABLED_MECHANISMS=OAUTHBEARER
KAFKA_OPTS=-Djava.security.auth.login.config=$SRC/testHelpers/kafka/server-jaas_oauth.conf
KAFKA_CONNECTIONS_MAX_REAUTH_MS=15000
EOF
		return
	fi
	cat <<EOF
KAFKA_SASL_ENABLED_MECHANISMS=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
KAFKA_OPTS=-Djava.security.auth.login.config=$SRC/testHelpers/kafka/server-jaas.conf
KAFKA_AUTHORIZER_CLASS_NAME=org.apache.kafka.metadata.authorizer.StandardAuthorizer
KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND=true
KAFKA_SUPER_USERS=User:ANONYMOUS
EOF
}

# env_to_properties turns KAFKA_FOO__BAR_BAZ=v lines into foo_bar.baz=v (the apache/kafka image's
# rule), leaving out KAFKA_OPTS, which is the JVM's.
env_to_properties() {
	local kv k v
	while IFS= read -r kv; do
		k=${kv%%=*} v=${kv#*=}
		[[ $k == KAFKA_OPTS ]] && continue
		k=${k#KAFKA_}
		k=${k,,}
		k=${k//__/$'\x01'}
		k=${k//_/.}
		k=${k//$'\x01'/_}
		printf '%s=%s\n' "$k" "$v"
	done
}

# node_start starts node N in the background and writes its pid to nodeN/pid.
node_start() {
	local broker=$1 n=$2
	case $broker in
	samsa)
		local -a envs=()
		mapfile -t envs <"$WORK/node$n/env"
		env -i PATH="$PATH" HOME="$HOME" CLUSTER_ID="$CLUSTER_ID" "${envs[@]}" \
			"$WORK/samsa" >>"$WORK/node$n/broker.log" 2>&1 </dev/null &
		;;
	kafka)
		kafka_log4j2 "$WORK/node$n/log4j2.properties" "$WORK/node$n/broker.log"
		kafka_broker 768m "$WORK/node$n/server.properties" "$WORK/node$n/log4j2.properties" \
			-Djava.security.auth.login.config="$(sed -n 's/^KAFKA_OPTS=.*login.config=//p' "$WORK/node$n/env")" \
			>>"$WORK/node$n/stdout.log" 2>&1 </dev/null &
		;;
	esac
	echo $! >"$WORK/node$n/pid"
}

# node_stop stops node N (TERM, KILL after 30 s).
node_stop() { stop_pidfile "$WORK/node$1/pid"; }

# kafka_tool runs Kafka 4.4's CLI tool NAME (kafka-topics, kafka-configs, ...) with ARGS.
kafka_tool() {
	KAFKA_REF_TOOL_LOG_LEVEL=ERROR "$KREF" tool "$@"
}

# docker_shim is the `docker` command the tests find first in PATH, for the calls of
# scripts/addPartitions.sh (the suite's other docker calls are in its CI set-up, done here):
#   docker ps ... -q                      prints the one "container", kafka1
#   docker exec ID bash -c "kafka-topics --zookeeper zookeeper:2181 ARGS"
#                                         runs Kafka 4.4's kafka-topics --bootstrap-server
#                                         localhost:9092 ARGS
docker_shim() {
	case ${1:-} in
	ps) echo kafka1 ;;
	exec)
		[[ ${3:-} == bash && ${4:-} == -c ]] || { echo "docker shim: only docker exec ID bash -c CMD" >&2; return 1; }
		local -a words
		read -r -a words <<<"${5//--zookeeper zookeeper:2181/--bootstrap-server localhost:9092}"
		[[ ${words[0]} == kafka-* ]] || { echo "docker shim: not a Kafka tool: ${words[0]}" >&2; return 1; }
		kafka_tool "${words[@]}"
		;;
	*)
		echo "docker shim: docker ${1:-} is not supported" >&2
		return 1
		;;
	esac
}

# inner runs inside the network namespace: loopback up, cluster up, the CI's set-up, jest, down.
inner() {
	local broker=$1
	shift
	netns_up
	stop_all() {
		local n
		for ((n = 1; n <= NODES; n++)); do node_stop "$n"; done
	}
	trap stop_all EXIT

	local n
	for ((n = 1; n <= NODES; n++)); do
		mkdir -p "$WORK/node$n"
		node_env "$n" >"$WORK/node$n/env"
		if [[ $broker == kafka ]]; then
			env_to_properties <"$WORK/node$n/env" >"$WORK/node$n/server.properties"
			kafka_format "$CLUSTER_ID" "$WORK/node$n/server.properties" "$WORK/node$n/format.out"
		fi
	done
	for ((n = 1; n <= NODES; n++)); do node_start "$broker" "$n"; done

	# Ready: every node answers Metadata listing itself on its PLAINTEXT_HOST listener (300 s
	# in all).
	# shellcheck disable=SC2317 # alive is called by poll_ready
	alive() { pidfiles_alive "$WORK"/node*/broker.log -- "$WORK"/node*/pid; }
	local start=$SECONDS
	for ((n = 1; n <= NODES; n++)); do
		poll_ready $((300 - (SECONDS - start))) "node $n" alive \
			"$WORK/samsa" health -q -b "localhost:$((9092 + 3 * (n - 1)))" --node-id "$((n - 1))" --timeout 2s
	done

	# scripts/createScramCredentials.sh (the OAUTHBEARER cluster gets it too, as its CI's; one mechanism a call: Kafka 4.4 refuses a user named
	# twice in one AlterUserScramCredentials request, DUPLICATE_RESOURCE) and the topic of
	# scripts/waitForKafka.js.
	local cfg
	for cfg in 'SCRAM-SHA-256=[iterations=8192,password=testtestscram=256]' 'SCRAM-SHA-512=[password=testtestscram=512]'; do
		kafka_tool kafka-configs --bootstrap-server localhost:9092 --alter --add-config "$cfg" \
			--entity-type users --entity-name testscram
	done
	kafka_tool kafka-topics --bootstrap-server localhost:9092 --create --if-not-exists \
		--topic test-topic-already-exists --replication-factor 1 --partitions 2

	local rc=0
	(cd "$SRC" && env PATH="$WORK/bin:$PATH" NODE_ENV=test KAFKAJS_DEBUG_PROTOCOL_BUFFERS=1 \
		KAFKA_VERSION="${KAFKA_VERSION:-4.4}" TEST_RETRIES="${TEST_RETRIES:-2}" OAUTHBEARER_ENABLED="${KAFKAJS_OAUTH:-0}" \
		JEST_JUNIT_OUTPUT_DIR="$WORK" JEST_JUNIT_OUTPUT_NAME=test-report.xml \
		node_modules/.bin/jest --ci --no-watchman --forceExit --maxWorkers="${JEST_WORKERS:-1}" \
		--json --outputFile="$WORK/results.json" "$@") >"$WORK/jest.log" 2>&1 || rc=$?
	stop_all
	return $rc
}

# table prints "status file > test" per test of jest --json files, one column per file when
# given several (a * marks a line whose outcomes differ), and the counts.
table() {
	node - "$@" <<'JS'
const fs = require('fs')
const files = process.argv.slice(2)
const runs = files.map(f => {
  const j = JSON.parse(fs.readFileSync(f, 'utf8'))
  const m = new Map()
  for (const tr of j.testResults) {
    const file = tr.name.replace(/^.*\/src\/(?=(src|testHelpers)\/)/, '')
    if (tr.assertionResults.length === 0) m.set(`${file} > (file)`, tr.status === 'passed' ? 'PASS' : 'FAIL')
    for (const a of tr.assertionResults) {
      const st = { passed: 'PASS', failed: 'FAIL', pending: 'SKIP', skipped: 'SKIP', todo: 'SKIP' }[a.status] || a.status
      // A name can repeat within a file; the repeats are told apart by their rank.
      let key = `${file} > ${a.fullName}`
      for (let i = 2; m.has(key); i++) key = `${file} > ${a.fullName} (#${i})`
      m.set(key, st)
    }
  }
  return m
})
const names = [...new Set(runs.flatMap(m => [...m.keys()]))].sort()
const counts = runs.map(() => ({ PASS: 0, FAIL: 0, SKIP: 0, '-': 0 }))
for (const n of names) {
  const sts = runs.map(m => m.get(n) || '-')
  sts.forEach((s, i) => (counts[i][s] = (counts[i][s] || 0) + 1))
  const diff = new Set(sts).size > 1 ? '*' : ' '
  console.log(`${diff} ${sts.map(s => s.padEnd(4)).join(' ')} ${n}`)
}
files.forEach((f, i) => {
  const c = counts[i]
  console.log(`# ${f}: ${c.PASS} pass, ${c.FAIL} fail, ${c.SKIP} skip${c['-'] ? `, ${c['-']} absent` : ''}`)
})
JS
}

# main is the whole command, parsed before it runs: editing this file while a run is under way
# does not change the run (bash reads a script as it goes).
main() {
	dispatch "$@"
	if [[ ${1:-} == table ]]; then
		shift
		table "$@"
		exit
	fi

	broker=${1:-samsa}
	(($# >= 1)) && shift
	check_broker "$broker" "[samsa|kafka] [jest args...] | $0 table RESULTS.json..."

	export WORK=${SUITES_WORK:-$(mktemp -d "/tmp/samsa-kafkajs-$broker-XXXXXX")}
	mkdir -p "$WORK"
	rm -rf "$WORK"/node* "$WORK/results.json"
	echo "kafkajs.sh: KafkaJS's tests against $broker in $WORK" >&2

	repo=${KAFKAJS_REPO:-/work/.mirror/tulios+kafkajs/repo}
	commit=$(git -C "$repo" rev-parse HEAD)
	export SRC=${KAFKAJS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/samsa-kafkajs/$commit}/src
	if [[ ! -e $SRC/node_modules/.bin/jest ]]; then
		rm -rf "$SRC"
		mkdir -p "$SRC"
		git -C "$repo" archive "$commit" | tar -x -C "$SRC"
		(cd "$SRC" && npm install --no-audit --no-fund --ignore-scripts) >&2
	fi

	build_samsa "$WORK/samsa" # the readiness probe of both brokers
	export KAFKA_CP=""
	if [[ $broker == kafka ]]; then
		kafka_classpath
	fi
	kafka_tool kafka-topics --version >/dev/null # resolves and caches the classpath outside the namespace

	docker_shim_install "$WORK/bin/docker" "$HERE/kafkajs.sh" WORK="$WORK" SRC="$SRC"

	args=("$@")
	if [[ ${KAFKAJS_OAUTH:-0} == 1 && $# == 0 ]]; then
		args=(src/producer/index.spec.js src/broker/__tests__/connect.spec.js src/consumer/__tests__/connection.spec.js
			src/broker/__tests__/disconnect.spec.js src/admin/__tests__/connection.spec.js src/broker/__tests__/reauthenticate.spec.js)
	fi
	rc=0
	in_netns "$HERE/kafkajs.sh" "$broker" "${args[@]}" || rc=$?
	if [[ -s $WORK/results.json ]]; then
		table "$WORK/results.json" | tee "$WORK/table.txt"
	else
		tail -n 40 "$WORK/jest.log" >&2 || true
	fi
	echo "kafkajs.sh: jest exit status $rc; files in $WORK" >&2
	exit $rc
}

main "$@"
exit
