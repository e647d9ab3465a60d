package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// withEpoch sets a batch's partition leader epoch (not covered by the CRC).
func withEpoch(b []byte, epoch int32) []byte {
	binary.BigEndian.PutUint32(b[12:], uint32(epoch))
	return b
}

// withBase sets a batch's base offset (not covered by the CRC).
func withBase(b []byte, base int64) []byte {
	setBaseOffset(b, base)
	return b
}

// TestAppendAsFollowerCopiesLeader replicates a leader's log batch by batch
// through Read and AppendAsFollower and checks the follower ends up with
// the same bytes, offsets and leader-epoch cache, also after a reopen.
func TestAppendAsFollowerCopiesLeader(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	leader := openTestLog(t, fsys, "/d/leader-0", smallConfig(), clock)
	defer leader.Close()
	follower := openTestLog(t, fsys, "/d/follower-0", smallConfig(), clock)
	for i := 0; i < 40; i++ {
		epoch := int32(i / 10 * 2) // epochs 0, 2, 4, 6
		mustAppend(t, leader, withEpoch(testBatch(3, 1000+int64(i), 40), epoch))
	}
	for off := follower.LogEndOffset(); off < leader.LogEndOffset(); off = follower.LogEndOffset() {
		b, err := leader.Read(off, 700, leader.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		info, err := follower.AppendAsFollower(b)
		if err != nil {
			t.Fatalf("AppendAsFollower at %d: %v", off, err)
		}
		if info.FirstOffset != off {
			t.Fatalf("first offset %d, want %d", info.FirstOffset, off)
		}
	}
	check := func(f *Log) {
		t.Helper()
		if f.LogEndOffset() != 120 {
			t.Fatalf("follower LEO %d", f.LogEndOffset())
		}
		lb, _ := leader.Read(0, 1<<20, 120, true)
		fb, _ := f.Read(0, 1<<20, 120, true)
		if !bytes.Equal(lb, fb) {
			t.Fatal("follower bytes differ from the leader's")
		}
		for _, epoch := range []int32{0, 1, 2, 3, 4, 5, 6} {
			le, lo := leader.EndOffsetForEpoch(epoch)
			fe, fo := f.EndOffsetForEpoch(epoch)
			if le != fe || lo != fo {
				t.Fatalf("epoch %d: follower %d %d, leader %d %d", epoch, fe, fo, le, lo)
			}
		}
	}
	check(follower)
	if err := follower.Close(); err != nil {
		t.Fatal(err)
	}
	follower = openTestLog(t, fsys, "/d/follower-0", smallConfig(), clock)
	defer follower.Close()
	check(follower)
}

// TestAppendAsFollowerRejects checks every refusal and that a refused
// append leaves the log as it was.
func TestAppendAsFollowerRejects(t *testing.T) {
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys, "/d/t-0", smallConfig(), newClock())
	defer l.Close()
	if _, err := l.AppendAsFollower(withEpoch(testBatch(5, 1, 10), 3)); err != nil {
		t.Fatal(err)
	}
	badCRC := withBase(withEpoch(testBatch(2, 1, 10), 3), 5)
	badCRC[len(badCRC)-1] ^= 0xff
	two := append(withBase(withEpoch(testBatch(2, 1, 10), 3), 5), withBase(withEpoch(testBatch(2, 1, 10), 3), 6)...)
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"below LEO", withBase(withEpoch(testBatch(2, 1, 10), 3), 4), ErrUnexpectedOffset},
		{"overlapping batches", two, ErrUnexpectedOffset},
		{"bad CRC", badCRC, ErrCorrupt},
		{"epoch goes back", withBase(withEpoch(testBatch(2, 1, 10), 2), 5), ErrInvalidBatch},
		{"empty", nil, ErrInvalidBatch},
	} {
		if _, err := l.AppendAsFollower(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
		if l.LogEndOffset() != 5 {
			t.Fatalf("%s: LEO %d after a refused append", c.name, l.LogEndOffset())
		}
	}
	// A gap (a compacted leader) is accepted and moves the LEO past it.
	info, err := l.AppendAsFollower(withBase(withEpoch(testBatch(2, 1, 10), 4), 9))
	if err != nil {
		t.Fatal(err)
	}
	if info.FirstOffset != 9 || l.LogEndOffset() != 11 {
		t.Fatalf("gap append: %+v, LEO %d", info, l.LogEndOffset())
	}
	if e, off := l.EndOffsetForEpoch(3); e != 3 || off != 9 {
		t.Fatalf("epoch 3 ends at %d %d", e, off)
	}
}

// TestFollowerTruncateAndRefetch is a follower's divergence: it truncates
// to the leader's epoch end, then appends the leader's newer epoch; a
// crash right after the truncation keeps it (it is synced).
func TestFollowerTruncateAndRefetch(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newClock()
	l := openTestLog(t, fsys, "/d/t-0", smallConfig(), clock)
	for i := 0; i < 10; i++ {
		if _, err := l.AppendAsFollower(withBase(withEpoch(testBatch(2, 1, 10), int32(1+i/5)), int64(2*i))); err != nil {
			t.Fatal(err)
		}
	}
	l.SetHighWatermark(12)
	// The new leader says epoch 1 ended at 10, and its epoch 3 follows.
	if err := l.TruncateTo(10); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 10 || l.HighWatermark() != 10 || l.LatestEpoch() != 1 {
		t.Fatalf("after truncate: LEO %d HW %d epoch %d", l.LogEndOffset(), l.HighWatermark(), l.LatestEpoch())
	}
	crashed := fsys.CrashClone()
	if _, err := l.AppendAsFollower(withBase(withEpoch(testBatch(4, 1, 10), 3), 10)); err != nil {
		t.Fatal(err)
	}
	if e, off := l.EndOffsetForEpoch(2); e != 1 || off != 10 {
		t.Fatalf("epoch 2 after refetch: %d %d", e, off)
	}
	l.Close()
	r := openTestLog(t, crashed, "/d/t-0", smallConfig(), clock)
	defer r.Close()
	if r.LogEndOffset() != 10 || r.LatestEpoch() != 1 {
		t.Fatalf("after crash: LEO %d epoch %d", r.LogEndOffset(), r.LatestEpoch())
	}
	if err := r.TruncateFullyAndStartAt(50); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AppendAsFollower(withBase(withEpoch(testBatch(1, 1, 10), 3), 50)); err != nil {
		t.Fatal(err)
	}
	if r.LogStartOffset() != 50 || r.LogEndOffset() != 51 || r.LatestEpoch() != 3 {
		t.Fatalf("restart at 50: start %d LEO %d epoch %d", r.LogStartOffset(), r.LogEndOffset(), r.LatestEpoch())
	}
}
