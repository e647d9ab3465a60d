#!/usr/bin/env bash
# kafka-run-class.sh CLASS ARGS... : the kafka-python fixtures' broker start (kafka.Kafka FILE)
# on samsa or Apache Kafka 4.4 (SUITE_BROKER); see ../README.md.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../lib.sh
. "$here/../../lib.sh" # free_ports
repo=${SAMSA_REPO:?SAMSA_REPO must name the samsa checkout}
ref=$repo/compat-tests/kafka-ref/kafka-ref.sh
cls=${1:?usage: kafka-run-class.sh CLASS ARGS...}

case ${SUITE_BROKER:?SUITE_BROKER must be samsa or kafka} in
kafka)
	if [[ $cls == kafka.Kafka ]]; then
		# INFO on stdout, as the fixture's log4j.properties (Log4j 1) asks.
		log4j=$(dirname "$2")/log4j2-stdout.properties
		cat >"$log4j" <<LOG4J
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
LOG4J
		export KAFKA_REF_LOG4J=$log4j
	fi
	# Kafka's kafka-run-class.sh: heap 256 MB unless KAFKA_HEAP_OPTS, G1, then KAFKA_OPTS.
	# KAFKA_CDS_ARCHIVE: a class data sharing archive of the broker's classes (kafka-python.sh
	# makes one): the JVM starts in a quarter of the time, which the fixture's start-up
	# deadlines (5, 10, 20, 40 s, 120 s in all) need on a loaded machine.
	cds=
	[[ $cls == kafka.Kafka && -s ${KAFKA_CDS_ARCHIVE:-} ]] && cds=-XX:SharedArchiveFile=$KAFKA_CDS_ARCHIVE
	export KAFKA_REF_TOOL_OPTS="${KAFKA_HEAP_OPTS:--Xmx256M} -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent $cds ${KAFKA_OPTS:-}"
	exec "$ref" run "$@"
	;;
samsa) ;;
*)
	echo "kafka-run-class.sh: SUITE_BROKER must be samsa or kafka" >&2
	exit 2
	;;
esac

[[ $cls == kafka.Kafka && $# -eq 2 ]] || {
	echo "kafka-run-class.sh: samsa runs only kafka.Kafka FILE, not $*" >&2
	exit 2
}
props=$2
dir=$(dirname "$props")
bin=${SAMSA_BINARY:?SAMSA_BINARY must name a samsa binary}

# prop KEY prints KEY's value in the properties file (the last one given).
prop() { sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*//p" "$props" | tail -1; }

node_id=$(prop node.id)
listeners=$(prop listeners)
advertised=$(prop advertised.listeners)
protocol_map=$(prop listener.security.protocol.map)
setup_port=$(free_ports 1)
setup=127.0.0.1:$setup_port

cluster_id=
scram=()
if [[ -f $dir/samsa-format.env ]]; then
	# CLUSTER_ID=... and SCRAM=MECH USER PASSWORD lines, from kafka-storage.sh format.
	while IFS='=' read -r k v; do
		case $k in
		CLUSTER_ID) cluster_id=$v ;;
		SCRAM) scram+=("$v") ;;
		esac
	done <"$dir/samsa-format.env"
fi

# The readiness watcher: after exec, this script's pid is samsa's.
broker_pid=$$
(
	deadline=$((SECONDS + 180))
	until "$bin" health -q -b "$setup" --timeout 2s >/dev/null 2>&1; do
		kill -0 "$broker_pid" 2>/dev/null || exit 0
		((SECONDS < deadline)) || { echo "kafka-run-class.sh: samsa not ready after 180 s" >&2; exit 1; }
		sleep 0.2
	done
	for s in "${scram[@]}"; do
		read -r mech user pw <<<"$s"
		"$bin" users set "$user" --password "$pw" --mechanism "$mech" -b "$setup" >/dev/null ||
			{ echo "kafka-run-class.sh: samsa users set $user failed" >&2; exit 1; }
		echo "kafka-run-class.sh (samsa): Replayed UserScramCredentialRecord creating new entry for $user ($mech)"
	done
	echo "kafka-run-class.sh (samsa): [KafkaRaftServer nodeId=$node_id] Kafka Server started"
) &

env=()
[[ -n $cluster_id ]] && env+=(CLUSTER_ID="$cluster_id")
exec env "${env[@]}" "$bin" --config "$props" \
	--override "listeners=$listeners,SAMSASETUP://$setup" \
	--override "advertised.listeners=${advertised:+$advertised,}SAMSASETUP://$setup" \
	--override "listener.security.protocol.map=$protocol_map,SAMSASETUP:PLAINTEXT"
