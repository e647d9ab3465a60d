#!/usr/bin/env bash
# kafka-storage.sh ARGS... : Kafka 4.4's StorageTool (SUITE_BROKER=kafka), or, for samsa, which
# formats its log dirs itself, `format` records the cluster id and the --add-scram credentials
# for kafka-run-class.sh (samsa-format.env beside the -c file); see ../README.md.
set -euo pipefail
repo=${SAMSA_REPO:?SAMSA_REPO must name the samsa checkout}
if [[ ${SUITE_BROKER:?} == kafka ]]; then
	exec "$repo/compat-tests/kafka-ref/kafka-ref.sh" tool kafka-storage "$@"
fi
[[ ${1:-} == format ]] || {
	echo "kafka-storage.sh (samsa): only format, not $*" >&2
	exit 2
}
shift
conf= id=
scram=()
while [[ $# -gt 0 ]]; do
	case $1 in
	-c | --config) conf=$2; shift 2 ;;
	-t | --cluster-id) id=$2; shift 2 ;;
	-S | --add-scram)
		# MECH=[name=USER,password=PW] (kafka-python's form; no iterations or salt given)
		if [[ $2 =~ ^(SCRAM-SHA-(256|512))=\[name=([^,]+),password=([^],]+)\]$ ]]; then
			scram+=("${BASH_REMATCH[1]} ${BASH_REMATCH[3]} ${BASH_REMATCH[4]}")
		else
			echo "kafka-storage.sh (samsa): --add-scram $2: want MECH=[name=U,password=P]" >&2
			exit 2
		fi
		shift 2
		;;
	--standalone | -s | --ignore-formatted | -g) shift ;;
	*) echo "kafka-storage.sh (samsa): unknown format argument $1" >&2; exit 2 ;;
	esac
done
[[ -n $conf ]] || { echo "kafka-storage.sh (samsa): format needs -c FILE" >&2; exit 2; }
{
	# Kafka 4.4 takes any cluster id string; samsa only a base64url UUID (see
	# compat-tests/FINDINGS.md). The fixture's ids are standard base64 of 16 random bytes:
	# the same UUID in base64url has - and _ for + and /.
	[[ -z $id ]] || echo "CLUSTER_ID=$(tr '+/' '-_' <<<"$id")"
	for s in "${scram[@]}"; do echo "SCRAM=$s"; done
} >"$(dirname "$conf")/samsa-format.env"
echo "Formatting metadata directory (samsa: recorded for kafka-run-class.sh)"
