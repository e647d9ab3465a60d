package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/config"
)

// fdLimitChildEnv makes the test binary the child of
// TestStartWithMorePartitionsThanFiles: "dir,limit".
const fdLimitChildEnv = "SAMSA_TEST_FDLIMIT_CHILD"

// TestStartWithMorePartitionsThanFiles is the regression test for issue 11
// item 5's last part: a broker holding more partitions than its open file
// limit allows could neither serve nor start again. A node with 300
// partitions is restarted in a child process whose hard and soft
// RLIMIT_NOFILE leave room for far fewer: it starts, opens what fits,
// says so in one ERROR line, and serves produce and fetch on an opened
// partition.
func TestStartWithMorePartitionsThanFiles(t *testing.T) {
	if v := os.Getenv(fdLimitChildEnv); v != "" {
		fdLimitChild(t, v)
		return
	}
	if testing.Short() {
		t.Skip("creates 300 partitions and starts a child process")
	}
	dir := t.TempDir()
	n := startTestNode(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addrs()[0].String()))
	if err != nil {
		t.Fatal(err)
	}
	// A slow machine can time the create out and the client retry it: the
	// retry then finds the topic its first attempt made.
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 300, 1, nil, "many"); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatal(err)
	}
	cl.Close()
	closeTestNode(t, n)

	// 300 partitions need 900 files; the child has room for about 100.
	limit := 1024 + 64 + 300
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestStartWithMorePartitionsThanFiles$", "-test.v")
	cmd.Env = append(os.Environ(), fdLimitChildEnv+"="+dir+","+strconv.Itoa(limit))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var opened, many, unopened int
	for _, line := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "RESULT opened=%d many=%d unopened=%d", &opened, &many, &unopened); err == nil {
			break
		}
	}
	// Every partition directory (the internal topics' too) is either
	// opened or left unopened.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	dirs := 0
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "partition.metadata")); err == nil {
			dirs++
		}
	}
	if many == 0 || unopened == 0 || opened+unopened != dirs {
		t.Fatalf("opened %d (%d of many), unopened %d, partition dirs %d\n%s", opened, many, unopened, dirs, out)
	}
	t.Logf("under RLIMIT_NOFILE %d: %d of %d partitions opened (%d of many), %d left unopened", limit, opened, dirs, many, unopened)
}

// fdLimitChild lowers RLIMIT_NOFILE (hard too, so that the broker cannot
// raise it), starts a node on dir and reports what it opened.
func fdLimitChild(t *testing.T, arg string) {
	dir, limitStr, _ := strings.Cut(arg, ",")
	limit, err := strconv.ParseUint(limitStr, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	cfg, err := config.Load([]string{"--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "log.dirs=" + dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := StartNode(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatalf("start with more partitions than open files: %v", err)
	}
	defer closeTestNode(t, n)
	if !strings.Contains(logs.String(), "level=ERROR msg=\"storage: partitions left unopened and offline") {
		t.Fatalf("no ERROR line for the unopened partitions:\n%s", logs.String())
	}
	// An opened partition serves produce and fetch.
	var p int32 = -1
	for tp := range n.logs.Logs() {
		if tp.Topic == "many" {
			p = tp.Partition
			break
		}
	}
	if p < 0 {
		t.Fatal("no partition of many opened")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addrs()[0].String()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"many": {p: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "many", Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce to opened partition %d: %v", p, err)
	}
	for got := 0; got < 1; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("fetch timed out")
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("partition %d: %v", p, err) })
		got += fs.NumRecords()
	}
	many := 0
	for tp := range n.logs.Logs() {
		if tp.Topic == "many" {
			many++
		}
	}
	fmt.Fprintf(os.Stdout, "RESULT opened=%d many=%d unopened=%d\n", len(n.logs.Logs()), many, n.logs.UnopenedAtStart())
}
