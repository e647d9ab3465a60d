#!/usr/bin/env bash
# aiokafka.sh runs aiokafka's own test suite (tests/ of aio-libs/aiokafka) against samsa or
# against Apache Kafka 4.4 and prints a table of each test's result.
#
#   compat-tests/suites/aiokafka.sh [samsa|kafka] [pytest args...]
#
#   e.g. aiokafka.sh samsa
#        aiokafka.sh kafka tests/test_consumer.py -k test_consumer_seek
#
# The suite's CI (.github/workflows/tests.yml, `make ci-test-all`) runs `pytest tests
# --docker-image aiolibs/kafka:2.13_2.8.1` (its newest broker): tests/conftest.py starts that
# image with the Docker SDK (docker-py), and the image's start-kafka.sh runs Kafka with
# PLAINTEXT, SSL (client certificates required), SASL_PLAINTEXT and SASL_SSL listeners, PLAIN
# and SCRAM users, an ACL authorizer, and a Kerberos KDC for GSSAPI. There is no Docker here:
# the script puts aiokafka-docker/ first on PYTHONPATH, a stand-in `docker` module with the calls
# conftest.py makes, which starts samsa or Kafka 4.4 with the image's configuration moved to
# KRaft (aiokafka-docker/docker/_broker.py says how; the same for both brokers), so the suite's
# code runs unmodified. Without a KDC the GSSAPI tests fail on both brokers.
#
# The suite runs in pure Python (AIOKAFKA_NO_EXTENSIONS=1, the CI's second run: the C
# extensions would need Cython and a build). Its unit tests run too: they need no broker and
# pass or fail alike on both.
#
# Environment:
#   AIO_WORK      scratch directory (default: a new /tmp/samsa-aiokafka-XXXXXX, kept): src/,
#                 broker/ (server.properties, broker.log), junit.xml, pytest.log, table.txt
#   AIO_SRC       an unpacked aiokafka tree to use instead of a fresh copy
#   AIO_GIT       the git directory to copy it from (default /work/.mirror/aio-libs+aiokafka/repo;
#                 `git archive ${AIO_REV:-HEAD}`)
#   AIO_VENV      the virtualenv (default ~/.cache/samsa-suites/aiokafka-venv; made with pip on
#                 first use: the pytest versions of requirements-ci.txt and aiokafka's
#                 dependencies)
#   AIO_IMAGE     the --docker-image the tests are told (default aiolibs/kafka:2.13_2.8.1; its
#                 tag's version gates tests with @kafka_versions)
#   SAMSA_BINARY  a samsa binary (default: go build ./cmd/samsa of this checkout)
#
# Needs: python3 (3.10+), pip reaching PyPI on the first run, openssl and keytool
# (gen-ssl-certs.sh), ktutil (krb5-user: conftest.py writes a keytab for every integration
# class), java (Kafka's tools; for kafka: the jars of compat-tests/kafka-ref), go.
# Exit status: that of pytest.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
broker=${1:-samsa}
shift || true
check_broker "$broker" "[samsa|kafka] [pytest args...]"
command -v ktutil >/dev/null || die "ktutil not found (apt-get install krb5-user)"

WORK=${AIO_WORK:-$(mktemp -d /tmp/samsa-aiokafka-XXXXXX)}
mkdir -p "$WORK"
src=${AIO_SRC:-$WORK/src}
if [[ ! -f $src/tests/conftest.py ]]; then
	git_dir=${AIO_GIT:-/work/.mirror/aio-libs+aiokafka/repo}
	[[ -d $git_dir ]] || die "no aiokafka sources: set AIO_SRC or AIO_GIT"
	unpack_git "$git_dir" "${AIO_REV:-HEAD}" "$src"
fi

venv=${AIO_VENV:-$HOME/.cache/samsa-suites/aiokafka-venv}
if [[ ! -x $venv/bin/pytest ]]; then
	make_venv "$venv" pytest==9.0.2 pytest-asyncio==1.3.0 pytest-mock==3.15.1 \
		async-timeout packaging typing_extensions cramjam
fi

broker_binary "$broker" "$WORK"
version_line=$(broker_version "$broker")
image=${AIO_IMAGE:-aiolibs/kafka:2.13_2.8.1}
export SHIM_BROKER=$broker SHIM_WORK=$WORK/broker SAMSA_REPO=$ROOT SAMSA_BINARY=${SAMSA_BINARY:-}
export AIOKAFKA_SRC=$src AIOKAFKA_NO_EXTENSIONS=1
export PYTHONPATH=$HERE/aiokafka-docker:$src${PYTHONPATH:+:$PYTHONPATH}
# Certificates from an earlier run would be reused by conftest.py: make them anew.
rm -rf "$src/tests/ssl_cert"

rev=$(cat "$src/.revision" 2>/dev/null || echo '?')
say "aiokafka ${rev:0:12} against $version_line; work dir $WORK"
args=("$@")
[[ " ${args[*]} " == *" tests"* ]] || args+=(tests)
rc=0
(cd "$src" && "$venv/bin/python" -m pytest -p no:cacheprovider -rfEs -v --docker-image "$image" \
	--no-pull --log-level DEBUG --junitxml="$WORK/junit.xml" -o junit_family=xunit1 "${args[@]}") \
	>"$WORK/pytest.log" 2>&1 || rc=$?
[[ -s $WORK/junit.xml ]] || { tail -40 "$WORK/pytest.log" >&2; die "pytest wrote no results (exit $rc)"; }
{
	echo "aiokafka ${rev:0:12} tests/ against $version_line (--docker-image $image, pure Python)"
	"$venv/bin/python" "$HERE/pytable.py" "$WORK/junit.xml"
} | tee "$WORK/table.txt"
say "log: $WORK/pytest.log; broker log: $WORK/broker/broker.log; table: $WORK/table.txt"
exit $rc
