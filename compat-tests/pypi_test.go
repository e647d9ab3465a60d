// This file runs the PyPI clients (confluent-kafka 2.x and aiokafka, installed by .ci/run into
// a virtual environment) against samsa and, as the reference they must also pass against,
// against Apache Kafka 4.4.0. The Debian-packaged clients keep their own tests
// (scripts_test.go); these cover what only the newer clients have: KIP-848 groups from
// librdkafka, aiokafka's asyncio client and its transactions.

package compattests

import (
	"os"
	"os/exec"
	"testing"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// defaultPyPIPython is the interpreter of the virtual environment .ci/run creates;
// SAMSA_PYPI_PYTHON overrides it.
const defaultPyPIPython = "/opt/samsa-venv/bin/python"

// pypiPython returns the virtual environment's interpreter after checking that it imports
// the given modules; without it the test skips (or fails with SAMSA_REQUIRE_CLIENTS=1).
func pypiPython(t *testing.T, modules ...string) string {
	t.Helper()
	py := os.Getenv("SAMSA_PYPI_PYTHON")
	if py == "" {
		py = defaultPyPIPython
	}
	for _, m := range modules {
		if out, err := exec.Command(py, "-c", "import "+m).CombinedOutput(); err != nil {
			missingClient(t, "%s cannot import %s (the PyPI venv .ci/run makes): %v\n%s", py, m, err, out)
		}
	}
	return py
}

// pypiScripts are the checks each broker runs, one script per client.
var pypiScripts = []struct{ name, script, prefix string }{
	{"confluent-kafka", "scripts/python/pypi_confluent_check.py", "pypi-ck"},
	{"aiokafka", "scripts/python/aiokafka_check.py", "pypi-aio"},
}

// TestPyPIClients runs scripts/python/pypi_confluent_check.py (confluent-kafka 2.x:
// codecs, classic and KIP-848 groups, transactions) and scripts/python/aiokafka_check.py
// (codecs, a classic group, transactions) against samsa and against Kafka 4.4.
func TestPyPIClients(t *testing.T) {
	t.Parallel()
	py := pypiPython(t, "confluent_kafka", "aiokafka")
	env := []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"}
	t.Run("samsa", func(t *testing.T) {
		t.Parallel()
		b := harness.Start(t, harness.Options{})
		for _, s := range pypiScripts {
			t.Run(s.name, func(t *testing.T) { runScript(t, env, py, s.script, b.Addr, s.prefix) })
		}
	})
	t.Run("kafka", func(t *testing.T) {
		t.Parallel()
		k := kafkaref.Start(t, kafkaref.Options{})
		for _, s := range pypiScripts {
			t.Run(s.name, func(t *testing.T) { runScript(t, env, py, s.script, k.Bootstrap(), s.prefix) })
		}
	})
}
