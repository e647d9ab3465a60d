package storage

import (
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

func TestTruncateTo(t *testing.T) {
	for _, target := range []int64{0, 1, 3, 150, 299, 300, 301, 500} {
		clock := newClock()
		fsys := vfs.NewMem()
		l := openTestLog(t, fsys, "/d/t-0", smallConfig(), clock)
		for i := 0; i < 100; i++ {
			mustAppend(t, l, testBatch(3, 1000+int64(i), 30))
		}
		l.SetHighWatermark(300)
		if err := l.TruncateTo(target); err != nil {
			t.Fatal(err)
		}
		want := min(target/3*3, 300) // whole batches only
		if got := l.LogEndOffset(); got != want {
			t.Fatalf("TruncateTo(%d): LEO %d, want %d", target, got, want)
		}
		if l.HighWatermark() != want {
			t.Fatalf("TruncateTo(%d): HW %d", target, l.HighWatermark())
		}
		hs := readAll(t, l, 0)
		if int64(len(hs)) != want/3 {
			t.Fatalf("TruncateTo(%d): %d batches: %s", target, len(hs), fmtOffsets(hs))
		}
		info := mustAppend(t, l, testBatch(3, 5000, 30))
		if info.FirstOffset != want {
			t.Fatalf("append after truncate at %d", info.FirstOffset)
		}
		if _, ts := l.MaxTimestamp(); ts < 0 {
			t.Fatal("no max timestamp")
		}
		if off, _, ok := l.OffsetForTimestamp(5000); !ok || off != want {
			t.Fatalf("OffsetForTimestamp after truncate: %d %v", off, ok)
		}
		// Reopen: indexes written by truncation are consistent.
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l2, err := OpenLog(LogOptions{FS: fsys, Dir: "/d/t-0", Config: smallConfig(), Now: clock.now, RecoveryPoint: want + 3, LogStartOffset: 0})
		if err != nil {
			t.Fatal(err)
		}
		if l2.LogEndOffset() != want+3 {
			t.Fatalf("reopened LEO %d", l2.LogEndOffset())
		}
		readAll(t, l2, 0)
		l2.Close()
	}
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, "/d/t-0", smallConfig(), newClock())
	defer l.Close()
	for i := 0; i < 100; i++ {
		mustAppend(t, l, testBatch(1, 1000, 30))
	}
	if err := l.AssignEpochStartOffset(3, 10); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateFullyAndStartAt(1000); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 1000 || l.LogEndOffset() != 1000 || l.HighWatermark() != 1000 {
		t.Fatal("offsets")
	}
	if got := segmentNames(t, fsys, "/d/t-0"); len(got) != 1 || got[0] != "00000000000000001000.log" {
		t.Fatalf("segments %v", got)
	}
	if e, _ := l.EndOffsetForEpoch(3); e != -1 {
		t.Fatal("epochs not cleared")
	}
	if info := mustAppend(t, l, testBatch(1, 1, 1)); info.FirstOffset != 1000 {
		t.Fatal("append")
	}
}

func TestLeaderEpochs(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	l := openTestLog(t, fsys, "/d/t-0", smallConfig(), clock)
	for _, a := range []struct {
		epoch int32
		start int64
	}{{0, 0}, {2, 10}, {2, 15}, {5, 20}} {
		if err := l.AssignEpochStartOffset(a.epoch, a.start); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 30; i++ {
		mustAppend(t, l, testBatch(1, 1000, 1))
	}
	cases := []struct {
		req     int32
		epoch   int32
		end     int64
		comment string
	}{
		{0, 0, 10, "first"},
		{1, 0, 10, "gap epoch"},
		{2, 2, 20, "second"},
		{4, 2, 20, "gap before latest"},
		{5, 5, 30, "latest: LEO"},
		{6, -1, -1, "future"},
		{-1, -1, -1, "undefined"},
	}
	check := func(l *Log) {
		t.Helper()
		for _, c := range cases {
			if e, off := l.EndOffsetForEpoch(c.req); e != c.epoch || off != c.end {
				t.Errorf("%s: EndOffsetForEpoch(%d) = %d %d, want %d %d", c.comment, c.req, e, off, c.epoch, c.end)
			}
		}
	}
	check(l)
	b, _ := readFile(fsys, "/d/t-0/leader-epoch-checkpoint")
	if string(b) != "0\n3\n0 0\n2 10\n5 20\n" {
		t.Fatalf("checkpoint %q", b)
	}
	l.Close()
	l = openTestLog(t, fsys, "/d/t-0", smallConfig(), clock)
	check(l)
	// Truncation drops epochs that start at or after the new end.
	if err := l.TruncateTo(15); err != nil {
		t.Fatal(err)
	}
	if e, off := l.EndOffsetForEpoch(2); e != 2 || off != 15 {
		t.Fatalf("after truncate: %d %d", e, off)
	}
	if e, off := l.EndOffsetForEpoch(5); e != -1 || off != -1 {
		t.Fatalf("dropped epoch: %d %d", e, off)
	}
	// A batch with a new partition leader epoch extends the cache.
	b2 := testBatch(1, 1, 1)
	b2[12], b2[13], b2[14], b2[15] = 0, 0, 0, 7
	mustAppend(t, l, b2)
	if e, off := l.EndOffsetForEpoch(6); e != 2 || off != 15 {
		t.Fatalf("epoch 6: %d %d", e, off)
	}
	if l.LatestEpoch() != 7 {
		t.Fatalf("latest epoch %d", l.LatestEpoch())
	}
	l.Close()
}

func TestLeaderEpochCacheTruncateFromStart(t *testing.T) {
	c := &leaderEpochCache{entries: []epochEntry{{1, 0}, {2, 10}, {3, 20}}}
	c.truncateFromStart(15)
	if len(c.entries) != 2 || c.entries[0] != (epochEntry{2, 15}) || c.entries[1] != (epochEntry{3, 20}) {
		t.Fatalf("%v", c.entries)
	}
	c.truncateFromStart(5)
	if c.entries[0] != (epochEntry{2, 15}) {
		t.Fatalf("%v", c.entries)
	}
}

// TestTruncateToEndDropsEmptyEpoch is a regression test for a follower
// livelock the fault test bed found (docs/DURABILITY.md, finding 1): a node
// became leader (its epoch cache got "epoch 2 starts at LEO"), was paused
// before it appended anything, and came back as a follower. It fetched with
// LastFetchedEpoch 2, which the new leader never had, got DivergingEpoch
// (epoch 0, end = our LEO), truncated to its own LEO -- a no-op that kept
// the empty epoch 2 -- and asked again, thousands of times a second, never
// rejoining the ISR. Truncating to or past the log end must still drop
// epochs that start there, as Kafka's UnifiedLog.truncateTo does.
func TestTruncateToEndDropsEmptyEpoch(t *testing.T) {
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, "/d/t-0", smallConfig(), newClock())
	if err := l.AssignEpochStartOffset(0, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		mustAppend(t, l, testBatch(3, 1000+int64(i), 30))
	}
	leo := l.LogEndOffset()
	if err := l.AssignEpochStartOffset(2, leo); err != nil {
		t.Fatal(err)
	}
	if got := l.LatestEpoch(); got != 2 {
		t.Fatalf("LatestEpoch %d, want 2", got)
	}
	if err := l.TruncateTo(leo); err != nil {
		t.Fatal(err)
	}
	if got := l.LatestEpoch(); got != 0 {
		t.Fatalf("after TruncateTo(LEO): LatestEpoch %d, want 0", got)
	}
	if l.LogEndOffset() != leo {
		t.Fatalf("LEO moved to %d", l.LogEndOffset())
	}
	// The dropped epoch stays dropped across a reopen.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := OpenLog(LogOptions{FS: fsys, Dir: "/d/t-0", Config: smallConfig(), Now: newClock().now, RecoveryPoint: leo})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if got := l2.LatestEpoch(); got != 0 {
		t.Fatalf("reopened: LatestEpoch %d, want 0", got)
	}
}

// TestAssignStaleEpochKeepsCache is a regression test for the leader-epoch
// cache losing its history (docs/DURABILITY.md, finding 3): a restarted
// node replaying its metadata log saw an old image naming it leader at an
// old epoch and assigned that epoch at its log end, which dropped every
// newer entry; when it then led at the current epoch its cache said
// "epoch 0 ends here", and followers asking about any epoch in between
// truncated tens of thousands of records. An epoch older than the newest
// one in the cache must change nothing.
func TestAssignStaleEpochKeepsCache(t *testing.T) {
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", smallConfig(), newClock())
	for epoch := int32(0); epoch < 3; epoch++ {
		if err := l.AssignEpochStartOffset(epoch, l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			mustAppend(t, l, testBatch(3, 1000+int64(i), 30))
		}
	}
	leo := l.LogEndOffset() // 27: epochs 0@0, 1@9, 2@18
	if err := l.AssignEpochStartOffset(1, leo); err != nil {
		t.Fatal(err)
	}
	if e, off := l.EndOffsetForEpoch(1); e != 1 || off != 18 {
		t.Fatalf("after a stale assign: epoch 1 ends at (%d, %d), want (1, 18)", e, off)
	}
	if got := l.LatestEpoch(); got != 2 {
		t.Fatalf("after a stale assign: LatestEpoch %d, want 2", got)
	}
	// A newer epoch still starts at the log end.
	if err := l.AssignEpochStartOffset(5, leo); err != nil {
		t.Fatal(err)
	}
	if e, off := l.EndOffsetForEpoch(2); e != 2 || off != leo {
		t.Fatalf("epoch 2 ends at (%d, %d), want (2, %d)", e, off, leo)
	}
}
