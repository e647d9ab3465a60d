// This file runs the non-Go clients: each script under scripts/ (kcat, KafkaJS,
// confluent-kafka-python, kafka-python) gets its own broker from the harness, is run
// with a deadline, has its output streamed into the test log, and fails the test on a
// non-zero exit. A missing tool skips its test, unless SAMSA_REQUIRE_CLIENTS=1 (set by
// .ci/run), where it fails. What these clients do differently from Kafka is written
// down in scripts/FINDINGS.md.

package compattests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scriptTimeout bounds one script run; the slowest (kafka-python, pure Python
// compression) takes well under a minute on 2 cores.
const scriptTimeout = 8 * time.Minute

// The record layout every script writes (see scripts/python/layout.py): record i of
// PREFIX-<codec> goes to partition i % scriptPartitions with key "key-<i>" and value
// "<codec>-<i>-<scriptFiller>".
const (
	scriptPartitions = 6
	scriptRecords    = 10000
	scriptFiller     = "samsa-compat-payload-samsa-compat-payload-samsa-compat-payload-samsa-compat-payload-"
)

var scriptCodecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// defaultPython is Debian's interpreter, the one python3-confluent-kafka and
// python3-kafka install for; a pyenv python3 earlier on PATH would not see them.
const defaultPython = "/usr/bin/python3"

// missingClient skips the test, or fails it when SAMSA_REQUIRE_CLIENTS=1.
func missingClient(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("SAMSA_REQUIRE_CLIENTS") == "1" {
		t.Fatalf("SAMSA_REQUIRE_CLIENTS=1 but "+format, args...)
	}
	t.Skipf(format, args...)
}

func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missingClient(t, "%s not found: %v", name, err)
	}
	return p
}

func pythonWith(t *testing.T, module string) string {
	t.Helper()
	py := os.Getenv("SAMSA_PYTHON")
	if py == "" {
		py = defaultPython
	}
	out, err := exec.Command(py, "-c", "import "+module).CombinedOutput()
	if err != nil {
		missingClient(t, "%s cannot import %s: %v\n%s", py, module, err, out)
	}
	return py
}

// logWriter hands each complete line written to it to t.Log.
type logWriter struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
	buf    []byte
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.t.Log(w.prefix + string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

func (w *logWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.t.Log(w.prefix + string(w.buf))
		w.buf = nil
	}
}

// runScript runs one client script to completion and fails the test if it exits
// non-zero or overruns scriptTimeout. The script runs in its own process group so
// that a timeout also ends the tools it started (kcat.sh runs kcat many times).
func runScript(t *testing.T, env []string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	w := &logWriter{t: t, prefix: filepath.Base(args[0]) + ": "}
	cmd.Stdout = w
	cmd.Stderr = w
	start := time.Now()
	err := cmd.Run()
	w.flush()
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %v: %v", args[0], scriptTimeout, err)
	}
	if err != nil {
		t.Fatalf("%s %s: %v (after %v)", name, strings.Join(args, " "), err, time.Since(start).Round(time.Millisecond))
	}
	t.Logf("%s passed in %v", args[0], time.Since(start).Round(time.Millisecond))
}

func newScriptClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatalf("kgo client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// brokerHasAPI reports whether the broker's ApiVersions answer lists key.
func brokerHasAPI(t *testing.T, addr string, key kmsg.Key) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, newScriptClient(t, addr))
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == int16(key) {
			return true
		}
	}
	return false
}

func scriptTopics(prefix string) []string {
	topics := make([]string, len(scriptCodecs))
	for i, c := range scriptCodecs {
		topics[i] = prefix + "-" + c
	}
	return topics
}

// verifyLayout reads every partition of PREFIX-<codec> from offset 0 with franz-go,
// without a group, and checks that it holds exactly the records a script wrote in the
// shared layout, in order, with header src=client and CreateTime timestamps that rise
// with the record index (each script sets timestamp BASE + i).
func verifyLayout(t *testing.T, addr, topic, codec, client string) {
	t.Helper()
	offsets := make(map[int32]kgo.Offset, scriptPartitions)
	for p := range int32(scriptPartitions) {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl := newScriptClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	next := make([]int, scriptPartitions)
	want := make([]int, scriptPartitions)
	for p := range want {
		want[p] = (scriptRecords - p + scriptPartitions - 1) / scriptPartitions
	}
	complete := func() bool {
		for p := range next {
			if next[p] < want[p] {
				return false
			}
		}
		return true
	}
	var mismatches []string
	var base int64 = -1
	for !complete() && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(tp string, p int32, err error) {
			if ctx.Err() == nil {
				t.Logf("fetch %s[%d]: %v", tp, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			p := int(r.Partition)
			n := next[p]
			next[p]++
			i := p + n*scriptPartitions
			if base < 0 {
				base = r.Timestamp.UnixMilli() - int64(i)
			}
			var problems []string
			if r.Offset != int64(n) {
				problems = append(problems, fmt.Sprintf("offset %d, want %d", r.Offset, n))
			}
			if got, want := string(r.Key), fmt.Sprintf("key-%d", i); got != want {
				problems = append(problems, fmt.Sprintf("key %q, want %q", got, want))
			}
			if got, want := string(r.Value), fmt.Sprintf("%s-%d-%s", codec, i, scriptFiller); got != want {
				problems = append(problems, fmt.Sprintf("value %q, want %q", got, want))
			}
			if len(r.Headers) != 1 || r.Headers[0].Key != "src" || string(r.Headers[0].Value) != client {
				var hs []string
				for _, h := range r.Headers {
					hs = append(hs, h.Key+"="+string(h.Value))
				}
				problems = append(problems, fmt.Sprintf("headers %q, want [src=%s]", hs, client))
			}
			if ts := r.Timestamp.UnixMilli(); ts != base+int64(i) {
				problems = append(problems, fmt.Sprintf("timestamp %d, want %d", ts, base+int64(i)))
			}
			if len(problems) > 0 && len(mismatches) < 5 {
				mismatches = append(mismatches, fmt.Sprintf("%s[%d] record %d: %s", topic, p, n, strings.Join(problems, "; ")))
			}
		})
	}
	if !complete() {
		t.Errorf("franz-go read %v records per partition of %s, want %v", next, topic, want)
	}
	if len(mismatches) > 0 {
		t.Errorf("records of %s written by %s do not match:\n%s", topic, client, strings.Join(mismatches, "\n"))
	}
	if complete() && len(mismatches) == 0 {
		t.Logf("franz-go read back %s: %d records over %d partitions, content, order and timestamps match", topic, scriptRecords, scriptPartitions)
	}
}

// TestKcat runs scripts/kcat.sh. kcat has no admin commands, so the topics are
// created here first.
func TestKcat(t *testing.T) {
	t.Parallel()
	lookTool(t, "kcat")
	b := harness.Start(t, harness.Options{})
	const prefix = "compat-kcat"
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resps, err := kadm.NewClient(newScriptClient(t, b.Addr)).CreateTopics(ctx, scriptPartitions, 1, nil, scriptTopics(prefix)...)
	if err != nil {
		t.Fatalf("creating topics for kcat: %v", err)
	}
	if err := resps.Error(); err != nil {
		t.Fatalf("creating topics for kcat: %v", err)
	}
	runScript(t, nil, "bash", "scripts/kcat.sh", b.Addr, prefix)
}

// TestKafkaJS runs scripts/js/kafkajs.js, then reads what it produced back with
// franz-go: KafkaJS itself can only consume through a consumer group, which the
// script does only when the broker lists JoinGroup (SAMSA_HAS_GROUPS=1).
func TestKafkaJS(t *testing.T) {
	t.Parallel()
	node := lookTool(t, "node")
	if _, err := os.Stat("scripts/js/node_modules/kafkajs/package.json"); err != nil {
		missingClient(t, "KafkaJS is not installed (run npm ci in compat-tests/scripts/js): %v", err)
	}
	b := harness.Start(t, harness.Options{})
	const prefix = "compat-kafkajs"
	groups := "0"
	if brokerHasAPI(t, b.Addr, kmsg.JoinGroup) {
		groups = "1"
	}
	t.Logf("broker lists JoinGroup: SAMSA_HAS_GROUPS=%s", groups)
	runScript(t, []string{"SAMSA_HAS_GROUPS=" + groups, "KAFKAJS_NO_PARTITIONER_WARNING=1"},
		node, "scripts/js/kafkajs.js", b.Addr, prefix)
	for _, codec := range scriptCodecs {
		verifyLayout(t, b.Addr, prefix+"-"+codec, codec, "kafkajs")
	}
}

// TestConfluentKafkaPython runs scripts/python/confluent_kafka_check.py (librdkafka).
func TestConfluentKafkaPython(t *testing.T) {
	t.Parallel()
	py := pythonWith(t, "confluent_kafka")
	b := harness.Start(t, harness.Options{})
	runScript(t, []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"},
		py, "scripts/python/confluent_kafka_check.py", b.Addr, "compat-confluent")
}

// TestKafkaPython runs scripts/python/kafka_python_check.py.
func TestKafkaPython(t *testing.T) {
	t.Parallel()
	py := pythonWith(t, "kafka")
	b := harness.Start(t, harness.Options{})
	runScript(t, []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"},
		py, "scripts/python/kafka_python_check.py", b.Addr, "compat-kafka-python")
}
