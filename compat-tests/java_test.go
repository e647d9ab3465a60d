// This file runs the Java checks of compat-tests/java (kafka-clients 4.4.0) against samsa
// and, as the reference they must also pass against, against Apache Kafka 4.4.0 started by
// kafkaref. The Maven project is compiled once (`mvn -B -q compile`, which also writes
// target/classpath.txt); .ci/run does that before the tests, so here it only happens when
// the sources are newer than the classes. All checks of one broker run in one JVM; each
// check becomes a subtest. A machine without java/mvn skips, unless SAMSA_REQUIRE_CLIENTS=1.

package compattests

import (
	"bufio"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/compat-tests/childproc"
	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// javaRunTimeout bounds one JVM running all client checks against one broker (about a
// minute on 2 cores, most of it group rebalances).
const javaRunTimeout = 8 * time.Minute

var javaBuild struct {
	once sync.Once
	cp   string
	err  error
	out  []byte
}

// javaClasspath returns the classpath of the compiled checks (target/classes first, then
// the resolved dependencies), compiling them with Maven when missing or stale.
func javaClasspath(t *testing.T) string {
	t.Helper()
	lookTool(t, "java")
	dir, err := filepath.Abs("java")
	if err != nil {
		t.Fatal(err)
	}
	javaBuild.once.Do(func() {
		if javaStale(dir) {
			if _, err := exec.LookPath("mvn"); err != nil {
				javaBuild.err = err
				return
			}
			cmd := exec.Command("mvn", "-B", "-q", "compile")
			cmd.Dir = dir
			javaBuild.out, javaBuild.err = cmd.CombinedOutput()
			if javaBuild.err != nil {
				return
			}
		}
		var deps []byte
		deps, javaBuild.err = os.ReadFile(filepath.Join(dir, "target", "classpath.txt"))
		javaBuild.cp = filepath.Join(dir, "target", "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(deps))
	})
	if javaBuild.err != nil {
		if _, ok := javaBuild.err.(*exec.Error); ok {
			missingClient(t, "cannot build compat-tests/java: %v", javaBuild.err)
		}
		t.Fatalf("building compat-tests/java (mvn -B -q compile): %v\n%s", javaBuild.err, javaBuild.out)
	}
	return javaBuild.cp
}

// javaStale reports whether target/classpath.txt or target/classes is missing or older
// than pom.xml or any file under src/.
func javaStale(dir string) bool {
	built, err := os.Stat(filepath.Join(dir, "target", "classpath.txt"))
	if err != nil {
		return true
	}
	if _, err := os.Stat(filepath.Join(dir, "target", "classes", "samsa", "compat", "Checks.class")); err != nil {
		return true
	}
	stale := false
	check := func(p string) {
		if st, err := os.Stat(p); err == nil && st.ModTime().After(built.ModTime()) {
			stale = true
		}
	}
	check(filepath.Join(dir, "pom.xml"))
	_ = filepath.WalkDir(filepath.Join(dir, "src"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			check(p)
		}
		return nil
	})
	return stale
}

// javaCheck is the outcome of one check, as printed by samsa.compat.Checks.
type javaCheck struct {
	name   string
	lines  []string
	passed bool
	ended  bool
}

// runJavaChecks runs `java -cp CP class args...` and returns its checks in order; the
// JVM's other output (client warnings) is logged as it comes.
func runJavaChecks(t *testing.T, cp, class string, args ...string) []*javaCheck {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), javaRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", append([]string{"-cp", cp, class}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	stderr := &logWriter{t: t, prefix: "java stderr: "}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := childproc.Start(cmd); err != nil {
		t.Fatalf("starting java: %v", err)
	}
	var checks []*javaCheck
	var cur *javaCheck
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "=== CHECK "):
			cur = &javaCheck{name: strings.TrimPrefix(line, "=== CHECK ")}
			checks = append(checks, cur)
		case strings.HasPrefix(line, "--- PASS ") || strings.HasPrefix(line, "--- FAIL "):
			if cur == nil {
				cur = &javaCheck{name: strings.Fields(line)[2]}
				checks = append(checks, cur)
			}
			cur.passed = strings.HasPrefix(line, "--- PASS ")
			cur.ended = true
			cur.lines = append(cur.lines, line)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		default:
			t.Log("java: " + line)
		}
	}
	err = cmd.Wait()
	stderr.flush()
	if ctx.Err() != nil {
		t.Errorf("java %s did not finish within %v", class, javaRunTimeout)
	} else if err != nil && allPassed(checks) {
		t.Errorf("java %s: %v", class, err)
	}
	t.Logf("java %s: %d checks in %v", class, len(checks), time.Since(start).Round(time.Millisecond))
	return checks
}

func allPassed(cs []*javaCheck) bool {
	for _, c := range cs {
		if !c.passed {
			return false
		}
	}
	return true
}

// reportJavaChecks turns each check into a subtest and fails the test when any check is
// missing from the wanted list or did not pass.
func reportJavaChecks(t *testing.T, checks []*javaCheck, want []string) {
	t.Helper()
	got := make(map[string]bool)
	for _, c := range checks {
		got[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			for _, l := range c.lines {
				t.Log(l)
			}
			if !c.ended {
				t.Fatalf("check %s never finished (the JVM died or timed out during it)", c.name)
			}
			if !c.passed {
				t.Fail()
			}
		})
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("check %s did not run", w)
		}
	}
}

// javaClientChecks are the checks of samsa.compat.ClientChecks, in their order.
var javaClientChecks = []string{
	"idempotent-none", "idempotent-gzip", "idempotent-snappy", "idempotent-lz4", "idempotent-zstd",
	"transactional-none", "transactional-gzip", "transactional-snappy", "transactional-lz4", "transactional-zstd",
	"consume-transform-produce", "seek-pause-offsetsForTimes",
	"group-classic-eager-range", "group-classic-cooperative-sticky", "group-classic-static-membership", "group-consumer-kip848",
	"group-online-migration", "group-online-migration-cooperative",
	"admin-topics-partitions", "admin-configs", "admin-delete-records", "admin-groups-offsets",
	"admin-transactions-producers", "admin-log-dirs-cluster",
}

// TestJavaClients runs samsa.compat.ClientChecks (kafka-clients 4.4.0: producers, consumers,
// groups of both protocols, Admin) against samsa and against Apache Kafka 4.4.0.
func TestJavaClients(t *testing.T) {
	t.Parallel()
	cp := javaClasspath(t)
	t.Run("samsa", func(t *testing.T) {
		t.Parallel()
		b := harness.Start(t, harness.Options{})
		reportJavaChecks(t, runJavaChecks(t, cp, "samsa.compat.ClientChecks", b.Addr, "all"), javaClientChecks)
	})
	t.Run("kafka", func(t *testing.T) {
		t.Parallel()
		k := kafkaref.Start(t, kafkaref.Options{})
		reportJavaChecks(t, runJavaChecks(t, cp, "samsa.compat.ClientChecks", k.Bootstrap(), "all"), javaClientChecks)
	})
}
