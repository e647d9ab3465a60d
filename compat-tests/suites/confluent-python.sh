#!/usr/bin/env bash
# confluent-python.sh runs confluent-kafka-python's own integration tests
# (tests/integration of confluentinc/confluent-kafka-python, the share consumer's included)
# against one samsa node or one Apache Kafka 4.4 node and prints a table of each test's result.
#
#   confluent-python.sh [samsa|kafka] [PYTEST ARGS...]
#   confluent-python.sh table SAMSA_RESULTS.tsv KAFKA_RESULTS.tsv   (two runs side by side)
#
#   PYTEST ARGS   narrow the run (test paths relative to the source tree, -k, ...);
#                 default: all of tests/integration
#
# Manual: CI has neither the sources nor the time (about 20 minutes per broker on 2 shared
# cores, plus a few minutes for the venv the first time). Needs python3 (3.9+, with venv),
# pip reaching PyPI, and for the reference broker what compat-tests/kafka-ref needs.
#
# What it does:
#  1. Sources: the repository's tree at CKPY_REF (default HEAD, v2.15.0 here) of the git dir
#     CKPY_GIT (default /work/.mirror/confluentinc+confluent-kafka-python/repo), unpacked
#     into CKPY_SRC (default /tmp/ckpy-src), or an unpacked tree already there.
#  2. A venv of its own (CKPY_VENV, default CKPY_SRC/.venv) with the suite's test
#     requirements (requirements/requirements-tests-install.txt, trivup included, which the
#     fixtures import) and the confluent-kafka wheel of the tree's version from PyPI
#     (pyproject.toml's version; CKPY_WHEEL_VERSION overrides), built once.
#  3. The broker, configured as the suite's trivup clusters configure Kafka: one KRaft node
#     (broker and controller) with num.partitions=3, the StandardAuthorizer with
#     super.users=User:admin and allow.everyone.if.no.acl.found=true, a PLAINTEXT and a
#     SASL_PLAINTEXT listener (PLAIN users admin/admin and sasl_user/sasl_user, and an
#     OAUTHBEARER unsecured validator with unsecuredLoginStringClaim_sub="admin" and
#     unsecuredValidatorRequiredScope="requiredScope"), and the lines of the suite's
#     TestUtils.broker_conf(): internal topics with replication factor 1 and min ISR 1, and
#     group.share.record.lock.duration.ms=group.share.min.record.lock.duration.ms=1000.
#     The OAUTHBEARER listener names its (unsecured) validator class, which trivup leaves to
#     Kafka's default: samsa refuses to start on an OAUTHBEARER listener without one.
#     Kafka's controller and inter-broker traffic uses SASL PLAIN as admin, as trivup's does;
#     samsa's is PLAINTEXT (its one node sends none over the network). No DOCKER listener.
#  4. pytest tests/integration with BROKERS set (the suite's ByoFixture). The SASL tests
#     (share_consumer_sasl/, fixture sasl_cluster) and the OAUTHBEARER tests
#     (share_consumer_oauth/, fixture oauth_trivup_cluster) start trivup clusters of their
#     own; the script appends fixtures of the same names to those conftest.py files of the
#     unpacked copy (marked "samsa: confluent-python.sh"), which hand the tests a ByoFixture
#     on the broker's SASL_PLAINTEXT listener with the client settings trivup would give
#     (sasl.mechanism PLAIN with sasl_user; OAUTHBEARER with librdkafka's unsecured JWT).
#     The OAUTHBEARER tests run in a second pass on a broker restarted with
#     connections.max.reauth.ms=5000, as their trivup fixture sets (the other tests run
#     without it, as their fixtures do).
#     KAFKA_HOME/bin holds kafka-configs.sh, kafka-topics.sh and kafka-acls.sh wrappers that
#     run Kafka 4.4's tools (kafka-ref.sh tool) for the tests that shell out to them.
#     Tests that need a Schema Registry server (tests/integration/schema_registry/ and the
#     share consumer's schema-registry deserialization cases) are deselected (-k "not
#     schema_registry") and listed as SKIPPED "needs a Schema Registry server".
#
# Other settings:
#   CKPY_WORK=DIR         broker data, logs, junit files (default /tmp/ckpy-<broker>-<pid>)
#   CKPY_TEST_TIMEOUT=S   pytest-timeout of one test (default 600)
#   TEST_CONSUMER_GROUP_PROTOCOL=consumer  the suite's KIP-848 variant (passed through)
#   SAMSA_BINARY=FILE     a samsa binary; default: `go build ./cmd/samsa` of this checkout
#                         (the table names the checkout's HEAD either way)
#   SAMSA_REPO=DIR        the samsa checkout (default: the one holding this script)
#
# The table has one row per test: PASSED, FAILED (with the first line of pytest's message),
# ERROR (a fixture failed), SKIPPED (with the reason). Exit status: 0 when nothing failed.
set -euo pipefail
# The whole script is one block, read before it runs: bash reads a script as it goes, and
# an edit of this file during a run (which takes long) would otherwise break the run.
{
broker=${1:-samsa}
shift || true
case $broker in
samsa | kafka) ;;
table)
	# table SAMSA.tsv KAFKA.tsv: the two runs' results.tsv side by side ("*": outcomes
	# differ), the form of compat-tests/suites/results/confluent-python.txt.
	[[ $# -eq 2 ]] || {
		echo "usage: $0 table SAMSA_RESULTS.tsv KAFKA_RESULTS.tsv" >&2
		exit 2
	}
	exec python3 - "$1" "$2" <<'EOF'
import sys

def load(path):
    with open(path) as fh:
        return {r[0]: r[1] for r in (line.rstrip('\n').split('\t') for line in fh) if r and r[0]}

samsa, kafka = load(sys.argv[1]), load(sys.argv[2])
names = sorted(set(samsa) | set(kafka))
width = max(len(n) for n in names)
print(f"{'TEST':<{width}}  {'samsa':<8} {'kafka':<8}")
for n in names:
    a, b = samsa.get(n, '-'), kafka.get(n, '-')
    print(f"{n:<{width}}  {a:<8} {b:<8}{' *' if a != b else ''}")
for label, d in (('samsa', samsa), ('kafka', kafka)):
    c = {s: sum(1 for v in d.values() if v == s) for s in ('PASSED', 'FAILED', 'ERROR', 'SKIPPED')}
    print(f"{label}: passed {c['PASSED']}, failed {c['FAILED']}, error {c['ERROR']}, skipped {c['SKIPPED']}")
EOF
	;;
*)
	echo "usage: $0 [samsa|kafka] [PYTEST ARGS...] | table SAMSA.tsv KAFKA.tsv" >&2
	exit 2
	;;
esac

# The shared functions of the samsa checkout (SAMSA_REPO when a copy of this script runs).
# shellcheck source=lib.sh
. "${SAMSA_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}/compat-tests/suites/lib.sh"
gitdir=${CKPY_GIT:-/work/.mirror/confluentinc+confluent-kafka-python/repo}
src=${CKPY_SRC:-/tmp/ckpy-src}
venv=${CKPY_VENV:-$src/.venv}
work=${CKPY_WORK:-/tmp/ckpy-$broker-$$}
test_timeout=${CKPY_TEST_TIMEOUT:-600}

# --- sources and venv --------------------------------------------------------------------
if [[ ! -f $src/tests/integration/conftest.py ]]; then
	[[ -d $gitdir ]] || die "no sources in $src and no git dir $gitdir (set CKPY_SRC or CKPY_GIT)"
	mkdir -p "$src"
	git -C "$gitdir" archive "${CKPY_REF:-HEAD}" | tar -x -C "$src"
fi
version=${CKPY_WHEEL_VERSION:-$(sed -n 's/^version = "\(.*\)"/\1/p' "$src/pyproject.toml" | head -1)}
[[ -n $version ]] || die "no version in $src/pyproject.toml (set CKPY_WHEEL_VERSION)"
if [[ ! -f $venv/.ckpy-ready-$version ]]; then
	say "setting up $venv (confluent-kafka==$version and the test requirements; a few minutes)"
	python3 -m venv "$venv"
	(cd "$src" && "$venv/bin/pip" install -q -r requirements/requirements-tests-install.txt \
		"confluent-kafka==$version") >"$src/ckpy-pip.out" 2>&1 || die "pip install failed; see $src/ckpy-pip.out"
	touch "$venv/.ckpy-ready-$version"
fi
py=$venv/bin/python

# The SASL and OAUTHBEARER fixtures, appended once to the copy's conftest.py files: a later
# definition of a fixture name in the same module replaces the earlier one.
marker="# samsa: confluent-python.sh"
if ! grep -qF "$marker" "$src/tests/integration/conftest.py"; then
	cat >>"$src/tests/integration/conftest.py" <<EOF

$marker: the SASL tests' cluster is the broker's SASL_PLAINTEXT listener (SASL_BROKERS)
# with the client settings trivup's create_sasl_cluster would give, not a trivup cluster.
@pytest.fixture(scope="session")
def sasl_cluster(request):
    yield create_byo_cluster({
        'bootstrap.servers': os.environ['SASL_BROKERS'],
        'broker.address.family': 'v4',
        'security.protocol': 'SASL_PLAINTEXT',
        'sasl.mechanism': 'PLAIN',
        'sasl.username': 'sasl_user',
        'sasl.password': 'sasl_user',
    })
EOF
fi
oauth_conftest=$src/tests/integration/share_consumer_oauth/conftest.py
if [[ -f $oauth_conftest ]] && ! grep -qF "$marker" "$oauth_conftest"; then
	cat >>"$oauth_conftest" <<EOF

$marker: the OAUTHBEARER tests' cluster is the broker's SASL_PLAINTEXT listener
# (SASL_BROKERS) with the client settings trivup gives an unsecured OAUTHBEARER cluster.
@pytest.fixture(scope="session")
def oauth_trivup_cluster():
    from tests.integration.conftest import create_byo_cluster
    yield create_byo_cluster({
        'bootstrap.servers': os.environ['SASL_BROKERS'],
        'broker.address.family': 'v4',
        'security.protocol': 'SASL_PLAINTEXT',
        'sasl.mechanism': 'OAUTHBEARER',
        'enable.sasl.oauthbearer.unsecure.jwt': True,
        'sasl.oauthbearer.config': 'scope=requiredScope principal=admin',
    })
EOF
fi

# --- the broker --------------------------------------------------------------------------
mkdir -p "$work"
broker_pid=
stop_broker() {
	stop_pid "$broker_pid"
	broker_pid=
}
trap stop_broker EXIT

if [[ $broker == samsa ]]; then
	bin=${SAMSA_BINARY:-}
	if [[ -z $bin ]]; then
		bin=$work/samsa
		build_samsa "$bin"
	fi
else
	kafka_classpath
fi
version_line=$(broker_version "$broker" "kafka-ref jars")

# start_broker NAME [EXTRA PROPERTIES...]: a fresh node in $work/NAME; sets bootstrap,
# sasl_bootstrap and broker_pid, and returns once the broker answers a Metadata request
# on both listeners.
start_broker() {
	local name=$1
	shift
	local dir=$work/$name
	rm -rf "$dir"
	mkdir -p "$dir/data"
	local ports p s c
	ports=$(free_ports 3)
	read -r p s c <<<"$ports"
	bootstrap=127.0.0.1:$p
	sasl_bootstrap=127.0.0.1:$s
	# Kafka's controller and inter-broker traffic authenticates as the super user admin
	# (SASL PLAIN), as in trivup's clusters: over PLAINTEXT it would be User:ANONYMOUS, and
	# the DENY ACLs test_describe_operations creates would fence the broker (its
	# BrokerHeartbeat gets CLUSTER_AUTHORIZATION_FAILED). samsa's one node sends no
	# controller or inter-broker requests over the network, and samsa takes only PLAINTEXT
	# on a controller listener.
	local controller_protocol=PLAINTEXT internal_lines="inter.broker.listener.name=PLAINTEXT"
	if [[ $broker == kafka ]]; then
		controller_protocol=SASL_PLAINTEXT
		internal_lines="inter.broker.listener.name=SASL_PLAINTEXT
sasl.mechanism.inter.broker.protocol=PLAIN
sasl.mechanism.controller.protocol=PLAIN
listener.name.controller.sasl.enabled.mechanisms=PLAIN
listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" password=\"admin\" user_admin=\"admin\";"
	fi
	cat >"$dir/server.properties" <<EOF
# Written by confluent-python.sh: trivup's KafkaBrokerApp settings and the suite's
# TestUtils.broker_conf().
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$c
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://$bootstrap,SASL_PLAINTEXT://$sasl_bootstrap,CONTROLLER://127.0.0.1:$c
advertised.listeners=PLAINTEXT://$bootstrap,SASL_PLAINTEXT://$sasl_bootstrap
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:$controller_protocol
$internal_lines
log.dirs=$dir/data
num.partitions=3
auto.create.topics.enable=true
delete.topic.enable=true
default.replication.factor=1
offsets.topic.replication.factor=1
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
allow.everyone.if.no.acl.found=true
sasl.enabled.mechanisms=PLAIN,OAUTHBEARER
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin" user_admin="admin" user_sasl_user="sasl_user";
listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin" unsecuredLoginLifetimeSeconds="3600" unsecuredValidatorRequiredScope="requiredScope";
listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
offsets.topic.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.share.record.lock.duration.ms=1000
group.share.min.record.lock.duration.ms=1000
EOF
	local line
	for line in "$@"; do
		echo "$line" >>"$dir/server.properties"
	done
	if [[ $broker == samsa ]]; then
		# offsets.topic.min.isr (TestUtils.broker_conf) is no Kafka setting: Kafka 4.4 logs
		# that it is unknown and starts; samsa refuses an unknown setting in the file.
		sed -i '/^offsets\.topic\.min\.isr=/d' "$dir/server.properties"
		"$bin" "$dir/server.properties" >"$dir/broker.log" 2>&1 &
		broker_pid=$!
	else
		kafka_log4j2 "$dir/log4j2.properties" "$dir/server.log"
		local id
		id=$("$KREF" run kafka.tools.StorageTool random-uuid)
		kafka_format "$id" "$dir/server.properties" "$dir/format.out" || die "formatting failed; see $dir/format.out"
		kafka_broker 1g "$dir/server.properties" "$dir/log4j2.properties" >"$dir/broker.log" 2>&1 </dev/null &
		broker_pid=$!
	fi
	# Bounded wait: a Metadata request answered on both listeners (the SASL one as admin).
	local deadline=$((SECONDS + 180))
	until "$py" - "$bootstrap" "$sasl_bootstrap" >/dev/null 2>&1 <<'EOF'; do
import sys
from confluent_kafka.admin import AdminClient
AdminClient({'bootstrap.servers': sys.argv[1]}).list_topics(timeout=3)
AdminClient({'bootstrap.servers': sys.argv[2], 'security.protocol': 'SASL_PLAINTEXT',
             'sasl.mechanism': 'PLAIN', 'sasl.username': 'admin',
             'sasl.password': 'admin'}).list_topics(timeout=3)
EOF
		kill -0 "$broker_pid" 2>/dev/null || die "the broker exited; see $dir/broker.log"
		((SECONDS < deadline)) || die "the broker did not answer within 180 s; see $dir/broker.log"
		sleep 0.5
	done
	say "$version_line on $bootstrap (SASL_PLAINTEXT $sasl_bootstrap); work dir $dir"
}

# --- the tests ---------------------------------------------------------------------------
# $KAFKA_HOME/bin/<tool>.sh wrappers around Kafka 4.4's tools (kafka-ref.sh tool): the
# client-quota tests of share_consumer/test_share_consumer_callbacks.py run kafka-configs.sh
# against either broker (trivup's clusters have the script of their own Kafka).
tool_wrappers "$work/kafka-home" kafka-configs kafka-topics kafka-acls
export KAFKA_HOME=$work/kafka-home
cd "$src"
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(tests/integration)
sr_filter="not schema_registry"
# run_pytest NAME ARGS...: one pytest pass, junit to $work/NAME.xml, console to NAME.out.
run_pytest() {
	local name=$1
	shift
	set +e
	BROKERS=$bootstrap SASL_BROKERS=$sasl_bootstrap timeout --kill-after=30 7200 \
		"$py" -m pytest -p no:cacheprovider --timeout "$test_timeout" -rfEs \
		--junitxml="$work/$name.xml" "$@" >"$work/$name.out" 2>&1
	local rc=$?
	set -e
	say "pytest pass $name exited $rc (output $work/$name.out)"
}

# The tests a Schema Registry server would be needed for.
BROKERS=127.0.0.1:1 "$py" -m pytest -p no:cacheprovider --collect-only -q -k "not ($sr_filter)" \
	"${args[@]}" 2>/dev/null | grep '::' >"$work/sr-deselected.txt" || true

start_broker main
run_pytest main -k "$sr_filter and not share_consumer_oauth" "${args[@]}"
stop_broker
# (Collected into a variable first: grep -q would stop reading early, and pipefail would
# take pytest's SIGPIPE for "no OAUTHBEARER tests".)
collected=$("$py" -m pytest -p no:cacheprovider --collect-only -q "${args[@]}" 2>/dev/null || true)
if grep -q '^tests/integration/share_consumer_oauth/' <<<"$collected"; then
	start_broker oauth connections.max.reauth.ms=5000
	run_pytest oauth -k "$sr_filter" tests/integration/share_consumer_oauth
	stop_broker
fi

# --- the table ---------------------------------------------------------------------------
"$py" - "$work" "$version_line" "$version" <<'EOF'
import glob, os, sys
import xml.etree.ElementTree as ET

work, broker, version = sys.argv[1:4]
rows = []
for f in sorted(glob.glob(os.path.join(work, '*.xml'))):
    for tc in ET.parse(f).getroot().iter('testcase'):
        name = tc.get('classname', '').replace('.', '/') + '.py::' + tc.get('name', '')
        state, why = 'PASSED', ''
        for tag, st in (('failure', 'FAILED'), ('error', 'ERROR'), ('skipped', 'SKIPPED')):
            el = tc.find(tag)
            if el is not None:
                state = st
                why = (el.get('message') or el.text or '').strip().splitlines()
                why = why[0] if why else ''
                break
        rows.append((name, state, why))
with open(os.path.join(work, 'sr-deselected.txt')) as fh:
    for line in fh:
        rows.append((line.strip(), 'SKIPPED', 'needs a Schema Registry server'))
rows.sort()
with open(os.path.join(work, 'results.tsv'), 'w') as out:
    for r in rows:
        out.write('\t'.join(r) + '\n')
print(f'confluent-kafka-python {version} integration tests against {broker}'
      f" (group protocol {os.environ.get('TEST_CONSUMER_GROUP_PROTOCOL', 'classic')})")
print(f"{'TEST':<110} {'RESULT':<8} DETAIL")
for name, state, why in rows:
    print(f'{name:<110} {state:<8} {why[:160]}')
count = {s: sum(1 for r in rows if r[1] == s) for s in ('PASSED', 'FAILED', 'ERROR', 'SKIPPED')}
print()
print(f"passed {count['PASSED']}, failed {count['FAILED']}, error {count['ERROR']}, skipped {count['SKIPPED']}")
print(f'results: {work}/results.tsv; pytest output: {work}/*.out')
sys.exit(1 if count['FAILED'] or count['ERROR'] else 0)
EOF
exit
}
