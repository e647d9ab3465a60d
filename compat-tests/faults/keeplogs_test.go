package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKeepLogsDirOnePerRun checks that every run of a test keeps its
// logs in a directory of its own under SAMSA_FAULTS_KEEP_LOGS (finding
// 16 of docs/DURABILITY.md: -test.count reused one directory and the
// failing run's member logs were overwritten by the next run), and that
// one run's callers all get the same directory.
func TestKeepLogsDirOnePerRun(t *testing.T) {
	base := t.TempDir()
	t.Setenv(keepLogsEnv, base)
	var dirs []string
	for i := range 3 {
		// Three runs of one test, as -test.count=3 makes them: the
		// same name, a new *testing.T each.
		t.Run("run", func(t *testing.T) {
			d := KeepLogsDir(t)
			if again := KeepLogsDir(t); again != d {
				t.Fatalf("run %d: a second call gave %s, the first %s", i, again, d)
			}
			if filepath.Dir(d) != base {
				t.Fatalf("run %d: %s is not directly under %s", i, d, base)
			}
			if err := os.WriteFile(filepath.Join(d, "node1.log"), []byte(fmt.Sprint(i)), 0o644); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, d)
		})
	}
	seen := map[string]bool{}
	for i, d := range dirs {
		if seen[d] {
			t.Fatalf("two runs share %s: %v", d, dirs)
		}
		seen[d] = true
		b, err := os.ReadFile(filepath.Join(d, "node1.log"))
		if err != nil || string(b) != fmt.Sprint(i) {
			t.Fatalf("run %d's log in %s: %q, %v", i, d, b, err)
		}
	}
	// Two runs started in the same microsecond of one process still get
	// two directories.
	at := time.Now()
	a, errA := makeRunDir(base, "TestX", at)
	b, errB := makeRunDir(base, "TestX", at)
	if errA != nil || errB != nil || a == b {
		t.Fatalf("same name and time: %s (%v), %s (%v)", a, errA, b, errB)
	}
	t.Setenv(keepLogsEnv, "")
	if d := KeepLogsDir(t); d != "" {
		t.Fatalf("SAMSA_FAULTS_KEEP_LOGS unset: got %q", d)
	}
}

// lineLogger is a kgo.Logger keeping its lines.
type lineLogger struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLogger) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (l *lineLogger) Log(_ kgo.LogLevel, msg string, kv ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimSuffix(fmt.Sprintln(append([]any{msg}, kv...)...), "\n"))
}

func (l *lineLogger) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls := l.lines
	l.lines = nil
	return ls
}

// TestStartTracerNamesTheOffsetSource feeds a member's start tracer
// OffsetFetch answers and deliveries and checks the source it logs for
// each start: the fetched commit, a reset for want of a commit, a reset
// below the fetched commit (finding 16's start from 0 below a commit of
// 1,682), and a jump within an assignment.
func TestStartTracerNamesTheOffsetSource(t *testing.T) {
	l := &lineLogger{}
	s := newStartTracer("q", l)
	answer := func(offsets map[int32]int64) {
		resp := kmsg.NewPtrOffsetFetchResponse()
		g := kmsg.NewOffsetFetchResponseGroup()
		topic := kmsg.NewOffsetFetchResponseGroupTopic()
		topic.Topic = "q"
		for p, o := range offsets {
			part := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			part.Partition, part.Offset, part.LeaderEpoch = p, o, 3
			topic.Partitions = append(topic.Partitions, part)
		}
		g.Topics = append(g.Topics, topic)
		resp.Groups = append(resp.Groups, g)
		if err := s.onFetched(context.Background(), nil, resp); err != nil {
			t.Fatal(err)
		}
	}
	want := func(step string, subs ...string) {
		t.Helper()
		all := strings.Join(l.take(), "\n")
		for _, sub := range subs {
			if !strings.Contains(all, sub) {
				t.Fatalf("%s: no %q in:\n%s", step, sub, all)
			}
		}
	}
	answer(map[int32]int64{0: 10, 1: -1, 2: 1682})
	want("answer", "OffsetFetch answered partition 2 committed 1682 leader_epoch 3")
	s.delivered(0, 10, 19)
	want("from the commit", "partition started partition 0 at 10 source committed offset")
	s.delivered(1, 0, 4)
	want("no commit", "partition started partition 1 at 0 source reset: the OffsetFetch had no committed offset")
	s.delivered(2, 0, 7)
	want("below the commit", "partition started partition 2 at 0 source reset below the fetched commit", "fetched_commit 1682")
	s.delivered(0, 20, 29)
	if ls := l.take(); len(ls) != 0 {
		t.Fatalf("a contiguous poll logged %q", ls)
	}
	s.delivered(0, 5, 6)
	want("jump", "partition jumped partition 0 at 5 expected 30")
}

// TestStaleViewsNamesTheNodeBehind checks the comparison of the nodes'
// own metadata after a recovery: finding 16's healed node 3 still
// naming itself leader of partition 2 at epoch 0 while the others name
// node 1 at epoch 1.
func TestStaleViewsNamesTheNodeBehind(t *testing.T) {
	agree := map[int]map[int32]partitionView{
		1: {0: {1, 0}, 2: {1, 1}},
		2: {0: {1, 0}, 2: {1, 1}},
		3: {0: {1, 0}, 2: {1, 1}},
	}
	if s := staleViews(agree); s != "" {
		t.Fatalf("nodes that agree: %q", s)
	}
	behind := map[int]map[int32]partitionView{
		1: {0: {1, 0}, 2: {1, 1}},
		2: {0: {1, 0}, 2: {1, 1}},
		3: {0: {1, 0}, 2: {3, 0}},
	}
	want := " node 3: p2 leader=3 epoch=0 (newest: leader=1 epoch=1)"
	if s := staleViews(behind); s != want {
		t.Fatalf("a node behind: got %q, want %q", s, want)
	}
	// A node missing a partition (answered with an error) is not behind.
	delete(behind[3], 2)
	if s := staleViews(behind); s != "" {
		t.Fatalf("a node without the partition: %q", s)
	}
}
