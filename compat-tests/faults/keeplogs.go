package faults

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// ErrKeepLogs is returned when the per-run log directory under
// SAMSA_FAULTS_KEEP_LOGS cannot be made.
var ErrKeepLogs = errors.New("faults: keep logs")

// keepLogsEnv names the directory under which each test run keeps its
// nodes' and clients' logs (KeepLogsDir).
const keepLogsEnv = "SAMSA_FAULTS_KEEP_LOGS"

// keepDirs maps each running test (its *testing.T) to its run's
// directory, so that the cluster, the workloads and the checker of one
// run write to the same place.
var keepDirs sync.Map

// KeepLogsDir returns the directory where this run of t keeps its logs,
// or "" when SAMSA_FAULTS_KEEP_LOGS is not set. Each run gets a
// directory of its own under SAMSA_FAULTS_KEEP_LOGS, named by the
// test, the wall-clock start and the process id
// (TestX-20261206T104012.123456-pid42), made on first use: repeated
// runs (-test.count, several test binaries at once) never overwrite an
// earlier run's logs. The name's time sorts runs in start order.
func KeepLogsDir(t testing.TB) string {
	base := os.Getenv(keepLogsEnv)
	if base == "" {
		return ""
	}
	if v, ok := keepDirs.Load(t); ok {
		return v.(string)
	}
	dir, err := makeRunDir(base, t.Name(), time.Now())
	if err != nil {
		t.Logf("%v (logs go to %s itself)", err, base)
		dir = base
	}
	if v, loaded := keepDirs.LoadOrStore(t, dir); loaded {
		// Another goroutine of the same test got there first.
		if dir != base {
			_ = os.Remove(dir)
		}
		return v.(string)
	}
	t.Cleanup(func() { keepDirs.Delete(t) })
	t.Logf("faults: keeping logs in %s", dir)
	return dir
}

// makeRunDir makes a fresh directory for one run of the test name under
// base, adding a counter if the name is taken.
func makeRunDir(base, name string, at time.Time) (string, error) {
	stem := fmt.Sprintf("%s-%s-pid%d", strings.NewReplacer("/", "_", " ", "_").Replace(name),
		at.UTC().Format("20060102T150405.000000"), os.Getpid())
	for i := 0; i < 100; i++ {
		dir := filepath.Join(base, stem)
		if i > 0 {
			dir = filepath.Join(base, fmt.Sprintf("%s-%d", stem, i))
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("%w: %w", ErrKeepLogs, err)
		}
	}
	return "", fmt.Errorf("%w: no free name for %s under %s", ErrKeepLogs, stem, base)
}
