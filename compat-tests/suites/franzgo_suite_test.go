package suites

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/compat-tests/childproc"
	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// franzGoModule is the client whose own tests TestFranzGoSuite runs, at the
// version samsa's go.mod requires.
const franzGoModule = "github.com/twmb/franz-go"

// franzGoSubset is the part of franz-go's pkg/kgo integration tests that runs in
// every CI run: SUBSET_DOC
var franzGoSubset = []string{}

// franzGoRecords is KGO_TEST_RECORDS for the subset: the ETL tests produce this
// many records (their default, 500,000, takes minutes on two loaded cores).
const franzGoRecords = 20000

// franzGoDeadline bounds the child `go test` (compiling the kgo tests included).
const franzGoDeadline = 6 * time.Minute

// TestFranzGoSuite runs franzGoSubset, franz-go's own tests copied unmodified
// from the module cache, against one samsa node configured as franz-go's CI
// configures Kafka (internal topics with replication factor 1, no initial
// rebalance delay), and fails unless every chosen test passes; a chosen test that
// is skipped or missing fails too, so a franz-go upgrade that renames one is
// noticed. The whole suite, and against Kafka 4.4 too, runs with run.sh.
func TestFranzGoSuite(t *testing.T) {
	src, err := ModuleDir(".", franzGoModule)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := CopyModule(src, dst); err != nil {
		t.Fatal(err)
	}
	b := harness.Start(t, harness.Options{
		Overrides: map[string]string{
			"group.initial.rebalance.delay.ms":         "0",
			"offsets.topic.replication.factor":         "1",
			"transaction.state.log.replication.factor": "1",
			"transaction.state.log.min.isr":            "1",
		},
	})

	run := "^(" + strings.Join(franzGoSubset, "|") + ")$"
	cmd := exec.Command("go", "test", "-json", "-count=1", "-timeout", franzGoDeadline.String(), "-run", run, "./pkg/kgo/")
	cmd.Dir = dst
	cmd.Env = append(os.Environ(),
		"GOWORK=off",
		"GOFLAGS=-mod=readonly",
		"KGO_SEEDS="+b.Addr,
		"KGO_TEST_RF=1",
		fmt.Sprintf("KGO_TEST_RECORDS=%d", franzGoRecords),
		"KGO_LOG_LEVEL=none",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Its own process group, so that a hung run is killed with the test binary
	// go test started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := childproc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(franzGoDeadline + time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		runErr = <-done
		t.Errorf("go test of franz-go's kgo did not end within %v", franzGoDeadline+time.Minute)
	}

	results, err := Parse(&stdout)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Result{}
	for _, r := range results {
		byName[r.Test] = r
	}
	for _, name := range franzGoSubset {
		r, ok := byName[name]
		switch {
		case !ok:
			t.Errorf("%s did not run", name)
		case r.Outcome != Pass:
			t.Errorf("%s: %s after %.1fs; its output and its subtests':\n%s", name, r.Outcome, r.Seconds, outputOf(results, name))
		default:
			t.Logf("%s: PASS (%.1fs)", name, r.Seconds)
		}
	}
	if runErr != nil && !t.Failed() {
		t.Errorf("go test of franz-go's kgo: %v\n%s", runErr, tail(stderr.String(), 60))
	}
	if t.Failed() {
		t.Logf("go test stderr:\n%s", tail(stderr.String(), 60))
	}
}

// outputOf returns the last output lines of test name and its subtests.
func outputOf(results []Result, name string) string {
	var lines []string
	for _, r := range results {
		if r.Test == name || strings.HasPrefix(r.Test, name+"/") {
			lines = append(lines, r.Output...)
		}
	}
	return tail(strings.Join(lines, "\n"), 80)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
