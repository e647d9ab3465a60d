package storage

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// BenchmarkMoveLog moves a 64 MiB log (1 MiB segments) between two log
// directories on the OS file system while one writer appends a 1.1 KiB
// batch every 0.5 ms (about 2 MB/s), and reports the move's MB/s and the
// slowest append during it (max-append-ms: the pause of the locked step,
// as producers see it).
func BenchmarkMoveLog(b *testing.B) {
	root := b.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	m, err := OpenManager(ManagerOptions{FS: vfs.OS, Dirs: dirs, Now: time.Now})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	cfg := DefaultLogConfig()
	cfg.SegmentBytes = 1 << 20
	tp := TopicPartition{Topic: "bench", Partition: 0}
	l, err := m.CreateLogIn(tp, [16]byte{1}, cfg, dirs[0])
	if err != nil {
		b.Fatal(err)
	}
	batch := testBatch(10, 1000, 100)
	for l.Size() < 64<<20 {
		if _, err := l.Append(append([]byte(nil), batch...)); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(l.Size())
	b.ResetTimer()
	var worst time.Duration
	tick := time.NewTicker(500 * time.Microsecond)
	defer tick.Stop()
	for i := 0; i < b.N; i++ {
		done := make(chan error, 1)
		go func() { done <- m.MoveLog(context.Background(), tp, dirs[(i+1)%2]) }()
	moving:
		for {
			select {
			case err := <-done:
				if err != nil {
					b.Fatal(err)
				}
				break moving
			case <-tick.C:
			}
			start := time.Now()
			if _, err := l.Append(append([]byte(nil), batch...)); err != nil {
				b.Fatal(err)
			}
			worst = max(worst, time.Since(start))
		}
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "max-append-ms")
}
