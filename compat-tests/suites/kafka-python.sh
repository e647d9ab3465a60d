#!/usr/bin/env bash
# kafka-python.sh runs kafka-python's own integration tests (test/integration of
# dpkp/kafka-python) against samsa or against Apache Kafka 4.4 and prints a table of each
# test's result.
#
#   compat-tests/suites/kafka-python.sh [samsa|kafka] [pytest args...]
#
#   e.g. kafka-python.sh samsa
#        kafka-python.sh kafka -k test_sasl
#        kafka-python.sh samsa test/integration/test_consumer_integration.py::test_kafka_consumer
#
# The suite's CI (.github/workflows/python-package.yml, `make test` with KAFKA_VERSION=4.3.0,
# its newest broker) runs `pytest test`: the unit tests (a mock broker in Python, no real
# broker) and test/integration, whose fixtures (fixtures.py, conftest.py) start a broker from
# a Kafka distribution in KAFKA_ROOT with a server.properties they render from
# servers/resources/default/kafka.properties (one combined KRaft node, the listener each test
# asks for: PLAINTEXT, SSL with a JKS keystore made by keytool and openssl, or SASL_PLAINTEXT
# with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 users from a JAAS file and `kafka-storage.sh
# format --add-scram`; the StandardAuthorizer with allow.everyone.if.no.acl.found=true;
# 4 partitions per auto-created topic; group.initial.rebalance.delay.ms=0). This script runs
# test/integration only (the unit tests need no broker), unmodified, with
# KAFKA_ROOT=compat-tests/suites/kafka-root: its bin/ scripts start samsa or Kafka 4.4 on the
# rendered file (kafka-root/README.md says how), so both brokers get the configuration the
# suite's CI gives Kafka.
#
# Two things differ from the suite's CI, the same for both brokers: a test that hangs past the
# suite's 300 s timeout fails alone (pytest-timeout's signal method; the suite's thread method
# ends the run without results), and Kafka 4.4's JVM starts from a class data sharing archive
# made once (~/.cache/samsa-suites; under load it otherwise misses the fixture's start deadlines).
#
# Environment:
#   KP_WORK       scratch directory (default: a new /tmp/samsa-kafka-python-XXXXXX, kept):
#                 src/ (the suite), junit.xml, pytest.log, table.txt
#   KP_SRC        an unpacked kafka-python tree to use instead of a fresh copy
#   KP_GIT        the git directory to copy it from (default
#                 /work/.mirror/dpkp+kafka-python/repo; `git archive ${KP_REV:-HEAD}`)
#   KP_VENV       the Python virtualenv (default ~/.cache/samsa-suites/kafka-python-venv;
#                 made with pip on first use: pytest, pytest-mock, pytest-timeout, py and the
#                 compression codecs of the suite's requirements-dev.txt)
#   KAFKA_VERSION the broker version the suite assumes (default 4.3.0, its CI's newest)
#   KAFKA_PYTHON_NET  the suite's network backend choice (default: unset, its selector backend)
#   SAMSA_BINARY  a samsa binary (default: go build ./cmd/samsa of this checkout)
#
# Needs: python3 (3.9+), pip reaching PyPI on the first run, java and keytool and openssl (the
# SSL fixture; for kafka: the jars of compat-tests/kafka-ref, and mvn the first time), go.
# Exit status: that of pytest (0 when every test that ran passed).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
broker=${1:-samsa}
shift || true
check_broker "$broker" "[samsa|kafka] [pytest args...]"

WORK=${KP_WORK:-$(mktemp -d /tmp/samsa-kafka-python-XXXXXX)}
mkdir -p "$WORK"
src=${KP_SRC:-$WORK/src}
if [[ ! -f $src/test/integration/fixtures.py ]]; then
	git_dir=${KP_GIT:-/work/.mirror/dpkp+kafka-python/repo}
	[[ -d $git_dir ]] || die "no kafka-python sources: set KP_SRC or KP_GIT"
	unpack_git "$git_dir" "${KP_REV:-HEAD}" "$src"
fi

venv=${KP_VENV:-$HOME/.cache/samsa-suites/kafka-python-venv}
if [[ ! -x $venv/bin/pytest ]]; then
	make_venv "$venv" pytest pytest-mock pytest-timeout py crc32c lz4 python-snappy xxhash zstandard
fi

broker_binary "$broker" "$WORK"
version_line=$(broker_version "$broker")
export SUITE_BROKER=$broker SAMSA_REPO=$ROOT SAMSA_BINARY=${SAMSA_BINARY:-}
export KAFKA_ROOT=$HERE/kafka-root KAFKA_VERSION=${KAFKA_VERSION:-4.3.0}
if [[ $broker == kafka ]]; then
	# A class data sharing archive of Kafka's broker classes, made once by a broker started
	# and stopped here (kafka-root/bin/kafka-run-class.sh uses it; see there why).
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/samsa-suites
	sum=$("$KREF" classpath | sha256sum | cut -c1-16)
	export KAFKA_CDS_ARCHIVE=$cache/kafka-broker-$sum.jsa
	if [[ ! -s $KAFKA_CDS_ARCHIVE ]]; then
		say "making $KAFKA_CDS_ARCHIVE (one broker start and stop)"
		mkdir -p "$cache" "$WORK/cds"
		read -r p c <<<"$(free_ports 2)"
		cat >"$WORK/cds/server.properties" <<PROPS
process.roles=broker,controller
node.id=0
controller.quorum.bootstrap.servers=127.0.0.1:$c
listeners=PLAINTEXT://127.0.0.1:$p,CONTROLLER://127.0.0.1:$c
controller.listener.names=CONTROLLER
log.dirs=$WORK/cds/data
offsets.topic.replication.factor=1
PROPS
		"$KAFKA_ROOT/bin/kafka-storage.sh" format --standalone -t cdsArchiveRun0000000w \
			-c "$WORK/cds/server.properties" >"$WORK/cds/format.out" 2>&1 ||
			die "kafka-storage.sh format failed; see $WORK/cds/format.out"
		# (KAFKA_OPTS first: a later assignment of the same prefix would be seen by it)
		KAFKA_OPTS="-XX:ArchiveClassesAtExit=$KAFKA_CDS_ARCHIVE.$$" KAFKA_CDS_ARCHIVE= \
			"$KAFKA_ROOT/bin/kafka-run-class.sh" kafka.Kafka "$WORK/cds/server.properties" \
			>"$WORK/cds/broker.out" 2>&1 &
		jpid=$!
		# shellcheck disable=SC2317 # called by poll_ready
		alive() { pidfiles_alive "$WORK/cds/broker.out" -- "+$jpid"; }
		poll_ready 300 "the broker" alive grep -q "Kafka Server started" "$WORK/cds/broker.out" ||
			{
				kill -KILL "$jpid" 2>/dev/null || true
				die "the broker did not start; see $WORK/cds/broker.out"
			}
		kill -TERM "$jpid"
		wait "$jpid" || true
		[[ -s $KAFKA_CDS_ARCHIVE.$$ ]] && mv "$KAFKA_CDS_ARCHIVE.$$" "$KAFKA_CDS_ARCHIVE"
	fi
fi
# The fixtures' temporary directories (broker data, SSL files) go under the work directory.
mkdir -p "$WORK/tmp"
export TMPDIR=$WORK/tmp

rev=$(cat "$src/.revision" 2>/dev/null || echo '?')
say "kafka-python ${rev:0:12} against $version_line; work dir $WORK"
# test/integration unless the arguments name tests themselves.
args=("$@")
[[ " ${args[*]} " == *" test/"* ]] || args+=(test/integration)
rc=0
# --timeout-method=signal: the suite's 300 s per-test timeout (pyproject.toml) fails the hung
# test and goes on; its own thread method ends the whole run (os._exit) without the results.
(cd "$src" && "$venv/bin/python" -m pytest -p no:cacheprovider -rfEs --timeout-method=signal \
	--junitxml="$WORK/junit.xml" -o junit_family=xunit1 "${args[@]}") \
	>"$WORK/pytest.log" 2>&1 || rc=$?
[[ -s $WORK/junit.xml ]] || { tail -40 "$WORK/pytest.log" >&2; die "pytest wrote no results (exit $rc)"; }
{
	echo "kafka-python ${rev:0:12} test/integration against $version_line (KAFKA_VERSION=$KAFKA_VERSION)"
	"$venv/bin/python" "$HERE/pytable.py" "$WORK/junit.xml"
} | tee "$WORK/table.txt"
say "log: $WORK/pytest.log; table: $WORK/table.txt"
exit $rc
