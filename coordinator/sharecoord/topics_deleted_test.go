package sharecoord

import (
	"context"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/storage/vfs"
)

// TestTopicsDeletedRemovesShareState: after TopicsDeleted, every
// share-partition of the deleted topic is gone from every loaded
// partition (tombstoned in the log, so a reload does not bring it back),
// and the other topics' state stays.
func TestTopicsDeletedRemovesShareState(t *testing.T) {
	ls := testLogs(t, vfs.NewMem(), 3, false)
	defer closeLogs(t, ls)
	c := startCoordinator(t, ls)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var gone, kept [16]byte
	copy(gone[:], "topic-deleted-01")
	copy(kept[:], "topic-kept-00001")
	var goneKeys, keptKeys []share.Key
	for _, g := range []string{"g1", "g2", "g3", "g4"} {
		for p := range int32(3) {
			goneKeys = append(goneKeys, share.Key{Group: g, TopicID: gone, Partition: p})
			keptKeys = append(keptKeys, share.Key{Group: g, TopicID: kept, Partition: p})
		}
	}
	for _, k := range append(append([]share.Key{}, goneKeys...), keptKeys...) {
		wantErr(t, "Initialize", c.Initialize(ctx, k, 1, 5), nil)
	}

	c.TopicsDeleted([][16]byte{gone})
	for _, k := range goneKeys {
		for {
			_, ok, err := c.ReadSummary(ctx, k)
			if err != nil {
				t.Fatalf("ReadSummary %v: %v", k, err)
			}
			if !ok {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("state of %v still there after TopicsDeleted", k)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	check := func(c *Coordinator) {
		t.Helper()
		for _, k := range keptKeys {
			if st, ok, err := c.ReadSummary(ctx, k); !ok || err != nil || st.StartOffset != 5 {
				t.Fatalf("state of a kept topic %v: %+v %v %v", k, st, ok, err)
			}
		}
		for _, k := range goneKeys {
			if _, ok, err := c.ReadSummary(ctx, k); ok || err != nil {
				t.Fatalf("state of a deleted topic %v: ok %v err %v", k, ok, err)
			}
		}
	}
	check(c)
	// Nothing left to delete: a second pass deletes nothing.
	if n, err := c.DeleteTopicsState(ctx, map[[16]byte]bool{gone: true}); n != 0 || err != nil {
		t.Fatalf("DeleteTopicsState again: %d %v, want 0", n, err)
	}
	c.Close()
	c = startCoordinator(t, ls)
	defer c.Close()
	check(c)
}
