# shellcheck shell=bash
# lib.sh is what the suite scripts of this folder (run.sh, sarama.sh, kafkajs.sh,
# confluent-go.sh, confluent-python.sh, confluent-js.sh, librdkafka.sh, aiokafka.sh,
# kafka-python.sh) share: messages, the broker argument, building samsa, the suite's sources
# and venv, starting and stopping a Kafka 4.4 broker JVM or a samsa process, waiting until a
# broker answers, and the results table. A script sources it after `set -euo pipefail`:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# It sets HERE (this folder), ROOT (the samsa checkout holding it) and SUITE_SCRIPT (the
# script's file name, the prefix of its messages), and defines functions only.

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SUITE_SCRIPT=$(basename "${BASH_SOURCE[1]:-$0}")
KREF=$ROOT/compat-tests/kafka-ref/kafka-ref.sh

# say MESSAGE: a line on stderr, prefixed by the script's name.
say() { echo "$SUITE_SCRIPT: $*" >&2; }

# die MESSAGE: say it and exit 1.
die() {
	say "$*"
	exit 1
}

# check_broker BROKER USAGE: BROKER must be samsa or kafka; otherwise the usage line
# ("usage: SCRIPT USAGE") and exit 2.
check_broker() {
	case $1 in
	samsa | kafka) ;;
	*)
		echo "usage: $0 $2" >&2
		exit 2
		;;
	esac
}

# build_samsa FILE: `go build ./cmd/samsa` of this checkout into FILE (samsa's CLI is also the
# readiness probe and the SCRAM tool of both brokers).
build_samsa() {
	(cd "$ROOT" && go build -o "$1" ./cmd/samsa) || die "go build ./cmd/samsa failed"
}

# kafka_classpath: exports KAFKA_CP, the classpath of Kafka 4.4's jars (kafka-ref.sh resolves
# them with Maven the first time).
kafka_classpath() {
	KAFKA_CP=$("$KREF" classpath) || die "kafka-ref.sh classpath failed"
	export KAFKA_CP
}

# broker_version BROKER [KAFKA LABEL]: the broker's line in a table's title: "samsa <commit>" or
# "Apache Kafka 4.4.0 (LABEL)" (default kafka-ref).
broker_version() {
	if [[ $1 == samsa ]]; then
		echo "samsa $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
	else
		echo "Apache Kafka 4.4.0 (${2:-kafka-ref})"
	fi
}

# copy_module MODULE DIR: the module's tree of the version samsa's go.mod pins, copied from the
# Go module cache (read-only there) into DIR (replaced), writable, with its own test
# dependencies downloaded.
copy_module() {
	local mod=$1 dst=$2 src
	src=$(cd "$ROOT" && go list -m -f '{{.Dir}}' "$mod")
	[[ -d $src ]] || die "$mod is not in the module cache (go mod download in $ROOT)"
	rm -rf "$dst"
	cp -r "$src" "$dst"
	chmod -R u+w "$dst"
	(cd "$dst" && GOWORK=off go mod download)
}

# unpack_git GITDIR REV DIR: `git archive REV` of GITDIR unpacked into DIR, and the commit in
# DIR/.revision.
unpack_git() {
	local gitdir=$1 rev=$2 dst=$3
	mkdir -p "$dst"
	git -C "$gitdir" archive "$rev" | tar -x -C "$dst"
	git -C "$gitdir" rev-parse "$rev" >"$dst/.revision"
}

# make_venv DIR PIP ARGS...: a Python virtualenv in DIR with `pip install -q PIP ARGS`.
make_venv() {
	local venv=$1
	shift
	say "making the virtualenv $venv"
	python3 -m venv "$venv"
	"$venv/bin/pip" install -q "$@" || die "pip install failed"
}

# tool_wrappers DIR TOOL...: DIR/bin/TOOL.sh for each TOOL (kafka-topics, kafka-configs, ...),
# scripts that run Kafka 4.4's tool of that name (kafka-ref.sh tool) against either broker.
tool_wrappers() {
	local dir=$1 tool
	shift
	mkdir -p "$dir/bin"
	for tool in "$@"; do
		printf '#!/bin/sh\nexec %q tool %s "$@"\n' "$KREF" "$tool" >"$dir/bin/$tool.sh"
		chmod +x "$dir/bin/$tool.sh"
	done
}

# docker_shim_install FILE SCRIPT VAR=VALUE...: FILE, an executable `docker` that exports the
# variables and runs `bash SCRIPT _docker ARGS` (the script's docker_shim), for a suite whose
# tests call docker.
docker_shim_install() {
	local file=$1 script=$2 kv
	shift 2
	mkdir -p "$(dirname "$file")"
	{
		printf '#!/usr/bin/env bash\nexport'
		for kv in "$@"; do printf ' %s=%q' "${kv%%=*}" "${kv#*=}"; done
		printf '\nexec bash %q _docker "$@"\n' "$script"
	} >"$file"
	chmod +x "$file"
}

# free_ports N: N free loopback ports below Linux's ephemeral range (32768+), where no outgoing
# connection can take one between this check and the broker's bind.
free_ports() {
	python3 -c '
import random, socket, sys
got = set()
for _ in range(2000):
    if len(got) == int(sys.argv[1]):
        break
    p = random.randint(20000, 31999)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        got.add(p)
    except OSError:
        pass
    finally:
        s.close()
else:
    raise SystemExit("no free ports")
print(" ".join(map(str, got)))' "$1"
}

# stop_pid PID: TERM, then KILL if it still runs after 30 s; reaps it if it is a child.
stop_pid() {
	local p=$1 i
	[[ -n $p ]] || return 0
	kill -TERM "$p" 2>/dev/null || true
	for ((i = 0; i < 300; i++)); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
}

# stop_pidfile FILE: stop_pid of the pid in FILE (nothing when FILE is empty or missing), then
# empty FILE.
stop_pidfile() {
	[[ -s $1 ]] || return 0
	stop_pid "$(cat "$1")"
	: >"$1"
}

# kafka_log4j2 FILE LOG: Kafka's Log4j 2 configuration in FILE: INFO and above appended to LOG.
kafka_log4j2() {
	cat >"$1" <<LOG4J
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $2
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
LOG4J
}

# kafka_format CLUSTER_ID PROPERTIES OUT [ARGS...]: Kafka 4.4's StorageTool format of the
# node of PROPERTIES (ARGS: --add-scram ...); its output in OUT, and on stderr when it fails.
kafka_format() {
	local id=$1 props=$2 out=$3
	shift 3
	java -Xmx256m -cp "$KAFKA_CP" kafka.tools.StorageTool format -t "$id" -c "$props" "$@" >"$out" 2>&1 ||
		{
			cat "$out" >&2
			return 1
		}
}

# kafka_broker HEAP PROPERTIES LOG4J [JVM ARGS...] &: a Kafka 4.4 broker (kafka.Kafka) on
# PROPERTIES, with the JVM settings of Kafka's kafka-server-start.sh and a heap of HEAP (e.g.
# 1g). Call it in the background only: it execs the JVM in the background subshell, so $! is
# the JVM's pid (which stop_pid stops); the caller redirects its output.
kafka_broker() {
	local heap=$1 props=$2 log4j=$3
	shift 3
	exec java "-Xmx$heap" "-Xms$heap" -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
		-XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true \
		"$@" -Dlog4j2.configurationFile="$log4j" -cp "$KAFKA_CP" kafka.Kafka "$props"
}

# poll_ready SECS WHAT ALIVE PROBE...: runs PROBE every 0.5 s until it succeeds. It fails when
# ALIVE (a command that checks the broker processes, and prints why and their logs when one
# exited) fails, or after SECS ("WHAT not ready after SECS s").
poll_ready() {
	local secs=$1 what=$2 alive=$3 deadline
	shift 3
	deadline=$((SECONDS + secs))
	until "$@"; do
		"$alive" || return 1
		((SECONDS < deadline)) || {
			say "$what not ready after $secs s"
			return 1
		}
		sleep 0.5
	done
}

# pidfiles_alive LOG... -- PIDFILE...: fails, naming the process and printing the last lines
# of the LOGs, when the process of a PIDFILE (or a pid given as +PID) no longer runs.
pidfiles_alive() {
	local -a logs=()
	while (($#)) && [[ $1 != -- ]]; do
		logs+=("$1")
		shift
	done
	shift
	local f p
	for f in "$@"; do
		if [[ $f == +* ]]; then
			p=${f#+}
		else
			p=$(cat "$f" 2>/dev/null) || p=
		fi
		if [[ -z $p ]] || ! kill -0 "$p" 2>/dev/null; then
			say "a process exited (pid ${p:-none}, $f); logs in $WORK"
			tail -n 30 "${logs[@]}" >&2 2>/dev/null || true
			return 1
		fi
	done
}

# in_netns SCRIPT ARGS...: runs `bash SCRIPT _inner ARGS` in a private network namespace
# (`unshare -n`, root): its own loopback, so the fixed ports a suite dials are free whatever
# else runs on the machine. The script's _inner starts with netns_up.
in_netns() {
	local script=$1
	shift
	unshare -n bash "$script" _inner "$@"
}

# netns_up: the namespace's loopback up.
netns_up() { ip link set lo up; }

# suite_table BROKER JSON OUT: the per-test table of a `go test -json` file (suitetable),
# printed and written to OUT.
suite_table() {
	(cd "$ROOT" && go run ./compat-tests/suites/suitetable "$1=$2") | tee "$3"
}

# dispatch ARGS...: a script's own entry points, when ARGS start with one, then exit with its
# status: `_inner ARGS` runs the script's inner (in_netns) and `_docker ARGS` its docker_shim
# (the docker command docker_shim_install writes). Otherwise it returns.
dispatch() {
	case ${1:-} in
	_inner)
		shift
		inner "$@"
		exit
		;;
	_docker)
		shift
		docker_shim "$@"
		exit
		;;
	esac
}

# broker_binary BROKER DIR: what the broker needs before a suite starts it: for samsa, exports
# SAMSA_BINARY (DIR/samsa, built from this checkout, unless SAMSA_BINARY is set); for kafka,
# fetches Kafka 4.4's jars (kafka-ref.sh fetch).
broker_binary() {
	if [[ $1 == samsa ]]; then
		if [[ -z ${SAMSA_BINARY:-} ]]; then
			SAMSA_BINARY=$2/samsa
			build_samsa "$SAMSA_BINARY"
		fi
	else
		"$KREF" fetch || die "kafka-ref.sh fetch failed"
	fi
	export SAMSA_BINARY=${SAMSA_BINARY:-}
}
