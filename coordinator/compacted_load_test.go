package coordinator

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
)

// TestLoadFromCompactedOffsetsLog checks that a coordinator loaded from a
// compacted __consumer_offsets log has the state of one loaded from the
// same log uncompacted: commits overwriting each other, a deleted group
// (tombstones) and offsets deleted with OffsetDelete.
func TestLoadFromCompactedOffsetsLog(t *testing.T) {
	fs := vfs.NewMem()
	cfg := storage.DefaultLogConfig()
	cfg.SegmentBytes = 2048
	cfg.Compact, cfg.Delete = true, false
	open := func(fs vfs.FS) map[int32]*storage.Log {
		out := map[int32]*storage.Log{}
		for p := range int32(2) {
			l, err := storage.OpenLog(storage.LogOptions{FS: fs, Dir: fmt.Sprintf("/data/__consumer_offsets-%d", p), Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			l.SetHighWatermark(l.LogEndOffset())
			out[p] = l
		}
		return out
	}
	start := func(ls map[int32]*storage.Log) *Coordinator {
		return newTestCoordinator(t, newLogs(), func(o *Options) {
			o.NumPartitions = 2
			o.OpenLog = func(p int32) (Log, error) { return StorageLog(ls[p]), nil }
		})
	}
	closeAll := func(ls map[int32]*storage.Log) {
		for _, l := range ls {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	ls := open(fs)
	c := start(ls)
	groups := make([]string, 8)
	for g := range groups {
		groups[g] = fmt.Sprintf("g%d", g)
	}
	for i := range 400 {
		resp := c.OffsetCommit(t.Context(), commitReq(groups[i%8], "", -1, fmt.Sprintf("t%d", i%2), map[int32]int64{int32(i % 3): int64(i)}))
		wantCode(t, "commit", commitCodes(resp)[0], nil)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g7"}
	if r := c.DeleteGroups(t.Context(), del); r.Groups[0].ErrorCode != 0 {
		t.Fatalf("DeleteGroups: %d", r.Groups[0].ErrorCode)
	}
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g6"
	odt := kmsg.NewOffsetDeleteRequestTopic()
	odt.Topic = "t0"
	odt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
	od.Topics = append(od.Topics, odt)
	if r := c.OffsetDelete(t.Context(), od); r.ErrorCode != 0 {
		t.Fatalf("OffsetDelete: %d", r.ErrorCode)
	}
	for i := range 40 { // a little more after the deletions
		resp := c.OffsetCommit(t.Context(), commitReq(groups[i%4], "", -1, "t1", map[int32]int64{0: int64(1000 + i)}))
		wantCode(t, "commit", commitCodes(resp)[0], nil)
	}
	c.Close()
	closeAll(ls)

	compacted := fs.Clone()
	cls := open(compacted)
	for p, l := range cls {
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		size := l.Size()
		st, ok, err := l.Clean(context.Background(), time.Now(), storage.CleanOptions{Force: true})
		if err != nil || !ok {
			t.Fatalf("clean partition %d: %v %v", p, ok, err)
		}
		if l.Size() >= size {
			t.Fatalf("partition %d: clean did not shrink the log (%d -> %d, %+v)", p, size, l.Size(), st)
		}
	}
	closeAll(cls)

	state := func(fs vfs.FS) string {
		ls := open(fs)
		defer closeAll(ls)
		c := start(ls)
		defer c.Close()
		var out []string
		for _, g := range groups {
			out = append(out, fmt.Sprint(g, fetchAll(t, c, g)))
		}
		lg := c.ListGroups(t.Context(), kmsg.NewPtrListGroupsRequest())
		var names []string
		for _, g := range lg.Groups {
			names = append(names, g.Group+"/"+g.GroupState)
		}
		slices.Sort(names)
		return fmt.Sprint(out, names)
	}
	want, got := state(fs), state(compacted)
	if got != want {
		t.Fatalf("state loaded from the compacted log:\n%s\nfrom the original:\n%s", got, want)
	}
	t.Log(want)
}
