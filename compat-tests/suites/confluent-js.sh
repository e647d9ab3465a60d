#!/usr/bin/env bash
# confluent-js.sh runs the integration tests of Confluent's JavaScript client
# (@confluentinc/kafka-javascript, github.com/confluentinc/confluent-kafka-javascript: librdkafka
# underneath) against one samsa node or one Apache Kafka 4.4 node, and prints each test's result:
# test/promisified (jest: the KafkaJS-compatible API, what its CI runs against a broker) and e2e/
# (mocha: the node-rdkafka-style API, which its CI does not run).
#
#   confluent-js.sh [samsa|kafka] [classic|consumer] [promisified|e2e|all] [TEST ARGS...]
#   confluent-js.sh samsa classic promisified test/promisified/admin     # one directory
#   confluent-js.sh kafka classic e2e e2e/admin.spec.js                   # one mocha file
#   confluent-js.sh table SAMSA/results.tsv KAFKA/results.tsv             # runs side by side
#
#   classic    the CI's "Promisified Tests (Classic Protocol)": test/docker/docker-compose.yml
#              (one cp-kafka 7.9.2 broker, ZooKeeper, a PLAINTEXT listener advertised as
#              localhost, offsets and transaction topics with replication factor 1, min ISR 1;
#              everything else the broker's defaults, num.partitions=1 among them), here one
#              KRaft node (broker and controller) with those settings.
#   consumer   the CI's "Promisified Tests (Consumer Protocol)": test/docker/kraft/server.properties
#              (apache/kafka 4.0.0, KRaft) with TEST_CONSUMER_GROUP_PROTOCOL=consumer: num.partitions=4,
#              broker.rack=RACK1 with the RackAwareReplicaSelector, the StandardAuthorizer with
#              super.users=User:admin and allow.everyone.if.no.acl.found, a SASL_PLAINTEXT PLAIN
#              listener (users admin and testuser of test/docker/kafka_jaas.conf),
#              connections.max.reauth.ms=10000, log.retention.bytes=1000000000,
#              group.consumer.min.session.timeout.ms=6000, group.consumer.session.timeout.ms=10000.
#              Kafka's controller listener and inter-broker traffic use SASL PLAIN as admin, as
#              there; samsa's controller listener is PLAINTEXT (its one node sends no controller or
#              inter-broker requests over the network, and samsa takes only PLAINTEXT there).
#
# Both suites find the broker in KAFKA_HOST (their documented variable), the broker's PLAINTEXT
# listener on a free loopback port. jest runs as the Makefile's promisified_test target
# (`jest --ci --runInBand`), mocha as its e2e target (`mocha --exit --timeout 120000`) but with
# mocha's default bdd interface, which the e2e files are written in (describe/it), in place of the
# target's `--ui exports`; each test file in a process of its own (run_file below says why).
# jest gets --forceExit: against Kafka (consumer protocol) a jest process stayed up after its
# tests had ended and written their results (the client's handles left open), until killed.
#
# Manual: CI has neither the sources nor the time. Needs git, node (18+, with its headers in
# /usr/include/node), npm reaching the registry, g++/make, OpenSSL and zlib headers, and for the
# reference broker what compat-tests/kafka-ref needs.
#
# How the client is built (recorded here because nothing prebuilt can be downloaded: the package's
# install script fetches a binary from GitHub releases):
#  1. The repository's tree at CKJS_REF (default v1.10.0) of the git dir CKJS_GIT (default
#     /work/.mirror/confluentinc+confluent-kafka-javascript/repo), unpacked into CKJS_SRC (default
#     ~/.cache/samsa-confluent-js/CKJS_REF/src). The published npm tarballs hold no tests.
#  2. deps/librdkafka is a git submodule (absent from `git archive`): it is taken from the npm
#     tarball of the same version (`npm pack @confluentinc/kafka-javascript@VERSION`, which bundles
#     librdkafka's sources; 2.15.0 for 1.10.0).
#  3. package.json is trimmed to what the tests need (no schemaregistry workspaces; dev
#     dependencies jest, ts-jest, typescript, @types/jest, mocha, node-gyp) and package-lock.json
#     dropped (its resolved URLs are Confluent's private registry); `npm install --ignore-scripts`.
#  4. `CKJS_LINKING=dynamic node-gyp rebuild --nodedir=/usr` (as the CI's Linux jobs: librdkafka's
#     configure without --install-deps, which would download OpenSSL and others from GitHub; it
#     links the system OpenSSL and zlib and builds build/deps/librdkafka.so).
#
# Other settings:
#   CKJS_WORK=DIR        broker data and logs, out/ (each test file's jest/mocha JSON and
#                        console), results.tsv
#                        (default /tmp/ckjs-<broker>-<mode>-<pid>)
#   CKJS_TIMEOUT=S       bound of each test file's run (default 1200)
#   SAMSA_BINARY=FILE    a samsa binary; default: `go build ./cmd/samsa` of this checkout
#
# results.tsv: "suite file > full test name", PASS/FAIL/SKIP, the failure's first message line.
# Exit status: 0 when nothing failed.
set -euo pipefail
# One block, read before it runs (bash reads a script as it goes; a run takes long).
{
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# table TSV...: the runs' results side by side ("*": outcomes differ) and the counts.
table() {
	node - "$@" <<'JS'
const fs = require('fs')
const files = process.argv.slice(2)
const runs = files.map(f => new Map(fs.readFileSync(f, 'utf8').split('\n').filter(Boolean).map(l => l.split('\t')).map(r => [r[0], r[1]])))
const names = [...new Set(runs.flatMap(m => [...m.keys()]))].sort()
const counts = runs.map(() => ({ PASS: 0, FAIL: 0, SKIP: 0, '-': 0 }))
for (const n of names) {
  const sts = runs.map(m => m.get(n) || '-')
  sts.forEach((s, i) => (counts[i][s] = (counts[i][s] || 0) + 1))
  console.log(`${new Set(sts).size > 1 ? '*' : ' '} ${sts.map(s => s.padEnd(4)).join(' ')} ${n}`)
}
files.forEach((f, i) => {
  const c = counts[i]
  console.log(`# ${f}: ${c.PASS} pass, ${c.FAIL} fail, ${c.SKIP} skip${c['-'] ? `, ${c['-']} absent` : ''}`)
})
JS
}

if [[ ${1:-} == table ]]; then
	shift
	table "$@"
	exit
fi
broker=${1:-samsa}
mode=${2:-classic}
what=${3:-all}
shift $(($# < 3 ? $# : 3))
check_broker "$broker" "[samsa|kafka] [classic|consumer] [promisified|e2e|all] [TEST ARGS...] | table TSV..."
case $mode in classic | consumer) ;; *) die "mode $mode: classic or consumer" ;; esac
case $what in promisified | e2e | all) ;; *) die "suite $what: promisified, e2e or all" ;; esac

ref=${CKJS_REF:-v1.10.0}
gitdir=${CKJS_GIT:-/work/.mirror/confluentinc+confluent-kafka-javascript/repo}
src=${CKJS_SRC:-${XDG_CACHE_HOME:-$HOME/.cache}/samsa-confluent-js/$ref/src}
work=${CKJS_WORK:-/tmp/ckjs-$broker-$mode-$$}
limit=${CKJS_TIMEOUT:-1200}
mkdir -p "$work"

# --- sources and build -------------------------------------------------------------------
if [[ ! -f $src/build/Release/confluent-kafka-javascript.node ]]; then
	[[ -d $gitdir ]] || die "no build in $src and no git dir $gitdir (set CKJS_SRC or CKJS_GIT)"
	say "unpacking $ref into $src and building it (npm, librdkafka and the addon: 10-20 minutes)"
	rm -rf "$src"
	mkdir -p "$src"
	git -C "$gitdir" archive "$ref" | tar -x -C "$src"
	version=$(node -p "require('$src/package.json').version")
	(
		cd "$src/.."
		rm -rf package ./*.tgz
		npm pack "@confluentinc/kafka-javascript@$version" >/dev/null
		tar -xzf ./*.tgz package/deps/librdkafka
		rm -rf "$src/deps/librdkafka"
		mv package/deps/librdkafka "$src/deps/librdkafka"
		rm -rf package ./*.tgz
	) || die "npm pack of @confluentinc/kafka-javascript@$version failed"
	rm -f "$src/package-lock.json"
	# deps/librdkafka.gyp runs librdkafka's make with an unbounded -j (a score of compilers at
	# once on a shared 2-core machine): bounded to the number of cores.
	sed -i "s/\"make\", \"-j\",/\"make\", \"-j$(nproc)\",/" "$src/deps/librdkafka.gyp"
	grep -q "\"-j$(nproc)\"" "$src/deps/librdkafka.gyp" || die "deps/librdkafka.gyp: no make -j to bound"
	node - "$src/package.json" <<'JS'
const fs = require('fs'), f = process.argv[2], j = JSON.parse(fs.readFileSync(f))
const keep = ['jest', 'ts-jest', 'typescript', '@types/jest', 'mocha', 'node-gyp']
for (const k of Object.keys(j.devDependencies)) if (!keep.includes(k)) delete j.devDependencies[k]
delete j.workspaces
delete j.overrides
fs.writeFileSync(f, JSON.stringify(j, null, 2) + '\n')
JS
	(cd "$src" && npm install --ignore-scripts --no-audit --no-fund) >"$src/../npm-install.out" 2>&1 ||
		die "npm install failed; see $src/../npm-install.out"
	# node-gyp's make -j 2 raced (librdkafka's config.h needed before the configure action had
	# written it); serial make it is (librdkafka's own make runs parallel), and when a rebuild
	# stops there anyway, a second `node-gyp build` finishes it.
	(
		cd "$src"
		export CKJS_LINKING=dynamic npm_config_nodedir=/usr
		node_modules/.bin/node-gyp rebuild --nodedir=/usr ||
			node_modules/.bin/node-gyp build --nodedir=/usr
	) >"$src/../build.out" 2>&1 || die "the build failed; see $src/../build.out"
fi

# --- the broker --------------------------------------------------------------------------
broker_pid=
stop_broker() {
	stop_pid "$broker_pid"
	broker_pid=
}
trap stop_broker EXIT
# samsa's CLI is also the readiness probe of both brokers.
bin=${SAMSA_BINARY:-$work/samsa}
[[ -n ${SAMSA_BINARY:-} ]] || build_samsa "$bin"
[[ $broker == kafka ]] && kafka_classpath
version_line=$(broker_version "$broker")

dir=$work/node
rm -rf "$dir"
mkdir -p "$dir/data"
read -r p s c <<<"$(free_ports 3)"
bootstrap=127.0.0.1:$p
props=$dir/server.properties
{
	echo "# Written by confluent-js.sh ($mode)."
	echo "process.roles=broker,controller"
	echo "node.id=0"
	echo "controller.quorum.voters=0@127.0.0.1:$c"
	echo "controller.listener.names=CONTROLLER"
	echo "log.dirs=$dir/data"
	if [[ $mode == classic ]]; then
		cat <<EOF
listeners=PLAINTEXT_HOST://$bootstrap,CONTROLLER://127.0.0.1:$c
advertised.listeners=PLAINTEXT_HOST://$bootstrap
listener.security.protocol.map=PLAINTEXT_HOST:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT_HOST
sasl.enabled.mechanisms=PLAIN
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
EOF
	else
		if [[ $broker == kafka ]]; then
			cprot=SASL_PLAINTEXT
			echo "security.inter.broker.protocol=SASL_PLAINTEXT"
			echo "sasl.mechanism.controller.protocol=PLAIN"
			echo "sasl.mechanism.inter.broker.protocol=PLAIN"
			echo "listener.name.controller.sasl.enabled.mechanisms=PLAIN"
			echo 'listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin" user_admin="admin" user_testuser="testpass";'
		else
			cprot=PLAINTEXT
			echo "inter.broker.listener.name=PLAINTEXT"
		fi
		cat <<EOF
listeners=PLAINTEXT://$bootstrap,SASL_PLAINTEXT://127.0.0.1:$s,CONTROLLER://127.0.0.1:$c
advertised.listeners=PLAINTEXT://$bootstrap,SASL_PLAINTEXT://127.0.0.1:$s
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:$cprot
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin" user_admin="admin" user_testuser="testpass";
num.partitions=4
auto.create.topics.enable=true
delete.topic.enable=true
default.replication.factor=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
super.users=User:admin
allow.everyone.if.no.acl.found=true
broker.rack=RACK1
replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector
group.coordinator.rebalance.protocols=classic,consumer
connections.max.reauth.ms=10000
log.retention.bytes=1000000000
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
sasl.enabled.mechanisms=PLAIN
group.consumer.min.session.timeout.ms=6000
group.consumer.session.timeout.ms=10000
EOF
	fi
} >"$props"

if [[ $broker == samsa ]]; then
	"$bin" "$props" >"$dir/broker.log" 2>&1 </dev/null &
	broker_pid=$!
else
	kafka_log4j2 "$dir/log4j2.properties" "$dir/server.log"
	kafka_format "$("$KREF" run kafka.tools.StorageTool random-uuid)" "$props" "$dir/format.out" ||
		die "formatting failed; see $dir/format.out"
	kafka_broker 1g "$props" "$dir/log4j2.properties" >"$dir/broker.log" 2>&1 </dev/null &
	broker_pid=$!
fi
alive() { pidfiles_alive "$dir/broker.log" -- "+$broker_pid"; }
probe() { "$bin" health -b "$bootstrap" -q --timeout 2s >/dev/null 2>&1; }
poll_ready 180 "$broker" alive probe || die "the broker did not start; see $dir/broker.log"
say "$version_line ($mode) on $bootstrap; work dir $work"

# --- the tests ---------------------------------------------------------------------------
env_vars=(KAFKA_HOST="$bootstrap" NODE_OPTIONS=--max-old-space-size=1536)
[[ $mode == consumer ]] && env_vars+=(TEST_CONSUMER_GROUP_PROTOCOL=consumer)
cd "$src"
rm -rf "$work/out"
mkdir -p "$work/out"
# run_file KIND N FILE: one test file in a process of its own (jest or mocha), its JSON in
# out/KIND-N.json, its console in out/KIND-N.out, its exit status in out/KIND-N.rc. One process a
# file: the client's native addon crashed now and then (glibc "double free or corruption" under
# jest, a segmentation fault under mocha, against both brokers), and a crash loses that file only.
run_file() {
	local kind=$1 n=$2 f=$3 rc=0
	local base=$work/out/$kind-$n
	echo "$f" >"$base.file"
	if [[ $kind == jest ]]; then
		env "${env_vars[@]}" timeout --kill-after=30 "$limit" node_modules/.bin/jest --ci --runInBand \
			--forceExit --no-colors --coverage=false --json --outputFile="$base.json" "$f" >"$base.out" 2>&1 || rc=$?
	else
		env "${env_vars[@]}" timeout --kill-after=30 "$limit" node_modules/.bin/mocha --exit --timeout 120000 \
			--reporter json --reporter-option "output=$base.json" "$f" >"$base.out" 2>&1 || rc=$?
	fi
	echo "$rc" >"$base.rc"
	say "$kind $f: exit status $rc"
}
n=0
if [[ $what != e2e ]]; then
	files=("$@")
	[[ ${#files[@]} -gt 0 && $what == promisified ]] || mapfile -t files < <(find test/promisified -name '*.spec.js' | sort)
	for f in "${files[@]}"; do
		n=$((n + 1))
		run_file jest "$n" "$f"
	done
fi
if [[ $what != promisified ]]; then
	files=("$@")
	[[ ${#files[@]} -gt 0 && $what == e2e ]] || files=(e2e/*.spec.js)
	for f in "${files[@]}"; do
		n=$((n + 1))
		run_file mocha "$n" "$f"
	done
fi
stop_broker

# --- the table ---------------------------------------------------------------------------
node - "$work" "$src" <<'JS' >"$work/results.tsv"
const fs = require('fs'), path = require('path')
const [work, src] = process.argv.slice(2)
const rows = new Map()
const add = (name, st, why) => {
  let key = name
  for (let i = 2; rows.has(key); i++) key = `${name} (#${i})`
  rows.set(key, [st, (why || '').split('\n').map(l => l.trim()).filter(Boolean)[0] || ''])
}
const rel = f => path.relative(src, f)
for (const f of fs.readdirSync(`${work}/out`).filter(f => f.endsWith('.file')).sort()) {
  const base = `${work}/out/${f.slice(0, -5)}`
  const file = fs.readFileSync(`${base}.file`, 'utf8').trim()
  if (!fs.existsSync(`${base}.json`)) {
    const rc = fs.existsSync(`${base}.rc`) ? fs.readFileSync(`${base}.rc`, 'utf8').trim() : '?'
    const tail = fs.existsSync(`${base}.out`) ? fs.readFileSync(`${base}.out`, 'utf8').trim().split('\n').slice(-1)[0] : ''
    add(`${file} > (file)`, 'FAIL', `no results: exit status ${rc} ${tail}`)
    continue
  }
  const j = JSON.parse(fs.readFileSync(`${base}.json`, 'utf8'))
  if (f.startsWith('jest-')) {
    for (const tr of j.testResults) {
      if (tr.assertionResults.length === 0) add(`${rel(tr.name)} > (file)`, tr.status === 'passed' ? 'PASS' : 'FAIL', tr.message)
      for (const a of tr.assertionResults) {
        const st = { passed: 'PASS', failed: 'FAIL', pending: 'SKIP', skipped: 'SKIP', todo: 'SKIP' }[a.status] || a.status
        add(`${rel(tr.name)} > ${a.fullName}`, st, (a.failureMessages || []).join('\n').replace(/\x1b\[[0-9;]*m/g, ''))
      }
    }
  } else {
    const failed = new Set(j.failures.map(t => t.fullTitle))
    const pending = new Set(j.pending.map(t => t.fullTitle))
    const seen = new Set()
    for (const t of [...j.tests, ...j.failures]) {
      if (seen.has(t.fullTitle)) continue
      seen.add(t.fullTitle)
      const st = failed.has(t.fullTitle) ? 'FAIL' : pending.has(t.fullTitle) ? 'SKIP' : 'PASS'
      add(`${file} > ${t.fullTitle}`, st, t.err && t.err.message)
    }
  }
}
for (const [k, [st, why]] of [...rows].sort((a, b) => a[0] < b[0] ? -1 : 1)) console.log(`${k}\t${st}\t${why.slice(0, 200)}`)
JS
echo "# confluent-kafka-javascript $ref ($mode) against $version_line"
awk -F'\t' '{printf "%-4s %s%s\n", $2, $1, ($3 != "" && $2 == "FAIL") ? "  [" $3 "]" : ""}' "$work/results.tsv"
counts=$(awk -F'\t' '{n[$2]++} END {printf "%d pass, %d fail, %d skip", n["PASS"], n["FAIL"], n["SKIP"]}' "$work/results.tsv")
echo "# $counts; results in $work/results.tsv"
grep -q $'\tFAIL\t' "$work/results.tsv" && exit 1
exit 0
}
