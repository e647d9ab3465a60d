package broker

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// newTestSyncer is a LogSyncer for node 1 over real log directories
// (fsyncs included, as a broker's).
func newTestSyncer(tb testing.TB, dirs ...string) *LogSyncer {
	tb.Helper()
	cfg, err := config.Load([]string{"--override", "log.dirs=" + strings.Join(dirs, ",")}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := storage.OpenManager(storage.ManagerOptions{Dirs: dirs, Logger: logger})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	return &LogSyncer{NodeID: 1, Config: cfg, Logs: m, Logger: logger}
}

// withTopic returns a copy of img with a topic of n partitions whose
// replicas alternate between nodes 1 and 2 when shared, else all node 1.
func withTopic(img *controller.Image, name string, id byte, n int, shared bool) *controller.Image {
	next := controller.EmptyImage("c", 1)
	for k, v := range img.Topics {
		next.Topics[k] = v
	}
	t := &controller.Topic{Name: name, ID: controller.Uuid{id, 1}}
	for p := range n {
		replica := int32(1)
		if shared && p%2 == 1 {
			replica = 2
		}
		t.Partitions = append(t.Partitions, controller.Partition{Partition: int32(p), Leader: replica, Replicas: []int32{replica}, ISR: []int32{replica}})
	}
	next.Topics[name] = t
	return next
}

// TestLogSyncerCreatesLogsConcurrently: a new topic's logs are created
// by several goroutines at once (log_create.go); every partition this
// node replicates gets its log with the topic's id, none of the others
// does, with one log directory and with two (where storage picks the
// directory, one log after another, and spreads them evenly).
func TestLogSyncerCreatesLogsConcurrently(t *testing.T) {
	for _, ndirs := range []int{1, 2} {
		t.Run(fmt.Sprintf("dirs=%d", ndirs), func(t *testing.T) {
			var dirs []string
			for i := range ndirs {
				dirs = append(dirs, filepath.Join(t.TempDir(), fmt.Sprint("d", i)))
			}
			s := newTestSyncer(t, dirs...)
			prev := controller.EmptyImage("c", 1)
			next := withTopic(prev, "many", 7, 101, true)
			s.Apply(prev, next)
			perDir := map[string]int{}
			for p := range int32(101) {
				tp := storage.TopicPartition{Topic: "many", Partition: p}
				_, ok := s.Logs.Log(tp)
				if mine := p%2 == 0; ok != mine {
					t.Fatalf("partition %d: log %v, want %v", p, ok, mine)
				}
				if !ok {
					continue
				}
				if got := s.Logs.TopicID(tp); got != [16]byte(next.Topics["many"].ID) {
					t.Fatalf("partition %d: topic id %x", p, got)
				}
				dir, _ := s.Logs.LogDirOf(tp)
				perDir[dir]++
			}
			if len(perDir) != ndirs {
				t.Fatalf("logs per directory %v, want %d directories", perDir, ndirs)
			}
			for d, n := range perDir {
				if want := 51 / ndirs; n < want {
					t.Fatalf("logs per directory %v: %s has %d, want at least %d", perDir, d, n, want)
				}
			}
			// The same image again creates nothing and keeps every log.
			s.Apply(next, next)
			if n := len(s.Logs.Logs()); n != 51 {
				t.Fatalf("%d logs after a repeated image, want 51", n)
			}
		})
	}
}

// BenchmarkLogSyncerCreateTopic: the OnChange step of a new 200-partition
// topic on one log directory (real files and fsyncs in the test's
// temporary directory), which a CreateTopics waits for; per partition.
func BenchmarkLogSyncerCreateTopic(b *testing.B) {
	const partitions = 200
	s := newTestSyncer(b, filepath.Join(b.TempDir(), "d"))
	img := controller.EmptyImage("c", 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		next := withTopic(img, fmt.Sprint("t", i), byte(i%250), partitions, false)
		next.Topics[fmt.Sprint("t", i)].ID = controller.Uuid{byte(i), byte(i >> 8), byte(i >> 16), 2}
		s.Apply(img, next)
		img = next
	}
	b.StopTimer()
	if n := len(s.Logs.Logs()); n != b.N*partitions {
		b.Fatalf("%d logs, want %d", n, b.N*partitions)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*partitions), "us/partition")
}
