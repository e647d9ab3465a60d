package coordinator

import (
	"fmt"
	"testing"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
)

// TestStorageLogRestart commits through real storage logs with small
// segments, so that loading reads across segment boundaries, then reopens
// the logs and a new coordinator over them.
func TestStorageLogRestart(t *testing.T) {
	fs := vfs.NewMem()
	cfg := storage.DefaultLogConfig()
	cfg.SegmentBytes = 2048
	open := func() map[int32]*storage.Log {
		out := map[int32]*storage.Log{}
		for p := range int32(2) {
			l, err := storage.OpenLog(storage.LogOptions{FS: fs, Dir: fmt.Sprintf("/data/__consumer_offsets-%d", p), Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			out[p] = l
		}
		return out
	}
	start := func(ls map[int32]*storage.Log) *Coordinator {
		c := newTestCoordinator(t, newLogs(), func(o *Options) {
			o.NumPartitions = 2
			o.OpenLog = func(p int32) (Log, error) { return StorageLog(ls[p]), nil }
		})
		return c
	}
	ls := open()
	c := start(ls)
	for i := range 100 {
		group := fmt.Sprintf("g%d", i%7)
		resp := c.OffsetCommit(t.Context(), commitReq(group, "", -1, "t", map[int32]int64{int32(i % 3): int64(i)}))
		wantCode(t, "commit", commitCodes(resp)[0], nil)
	}
	c.Close()
	for _, l := range ls {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}

	ls = open()
	c = start(ls)
	for g := range 7 {
		got := fetchAll(t, c, fmt.Sprintf("g%d", g))
		// The last commit of group g to partition p is the largest i
		// below 100 with i%7 == g and i%3 == p.
		for p := range 3 {
			last := int64(-1)
			for i := range 100 {
				if i%7 == g && i%3 == p {
					last = int64(i)
				}
			}
			if k := fmt.Sprintf("t/%d", p); got[k] != last {
				t.Fatalf("group g%d %s = %d, want %d", g, k, got[k], last)
			}
		}
	}
	c.Close()
	for _, l := range ls {
		_ = l.Close()
	}
}
