package suites

import (
	"os"
	"testing"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// TestMain removes the samsa binary the harness built once the tests end.
func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
