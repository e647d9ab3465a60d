package shards

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/samsa-broker/samsa/wire"
)

// fakeLog serves reads of one byte per offset from start to end; reads
// from at on come back empty (a truncated log) or fail.
type fakeLog struct {
	start, end int64
	emptyFrom  int64 // reads at or past it are empty (0: never)
	failAt     int64 // a read at it fails (-1: never)
}

func (l *fakeLog) LogStartOffset() int64 { return l.start }
func (l *fakeLog) LogEndOffset() int64   { return l.end }
func (l *fakeLog) Read(offset int64, maxBytes int, maxOffset int64, _ bool) ([]byte, error) {
	if offset == l.failAt {
		return nil, errors.New("disk on fire")
	}
	if l.emptyFrom != 0 && offset >= l.emptyFrom {
		return nil, nil
	}
	n := min(int64(maxBytes), maxOffset-offset, 3)
	return bytes.Repeat([]byte{1}, int(n)), nil
}

var errTestLoad = errors.New("test: load failed")

func TestReplay(t *testing.T) {
	// apply takes every byte read as one offset, or none at stuck.
	applyAll := func(stuck int64, seen *[]int64) func([]byte, int64) (int64, error) {
		return func(data []byte, offset int64) (int64, error) {
			*seen = append(*seen, offset)
			if offset == stuck {
				return offset, nil
			}
			return offset + int64(len(data)), nil
		}
	}
	t.Run("whole log", func(t *testing.T) {
		var seen []int64
		end, err := Replay(&fakeLog{start: 2, end: 10, failAt: -1}, 7, errTestLoad, applyAll(-1, &seen))
		if err != nil || end != 10 || len(seen) != 3 || seen[0] != 2 || seen[2] != 8 {
			t.Fatalf("end %d err %v reads at %v, want 10, nil, [2 5 8]", end, err, seen)
		}
	})
	t.Run("truncated while read", func(t *testing.T) {
		var seen []int64
		end, err := Replay(&fakeLog{end: 10, emptyFrom: 6, failAt: -1}, 7, errTestLoad, applyAll(-1, &seen))
		if err != nil || end != 10 || len(seen) != 3 {
			t.Fatalf("end %d err %v reads at %v, want 10, nil and three reads (the last empty)", end, err, seen)
		}
	})
	t.Run("no progress", func(t *testing.T) {
		var seen []int64
		_, err := Replay(&fakeLog{end: 10, failAt: -1}, 7, errTestLoad, applyAll(3, &seen))
		if !errors.Is(err, errTestLoad) || !strings.Contains(err.Error(), "partition 7: no progress at offset 3") {
			t.Fatalf("err %v, want the load error, partition 7, no progress at 3", err)
		}
	})
	t.Run("read error", func(t *testing.T) {
		var seen []int64
		_, err := Replay(&fakeLog{end: 10, failAt: 3}, 7, errTestLoad, applyAll(-1, &seen))
		if !errors.Is(err, errTestLoad) || !strings.Contains(err.Error(), "reading partition 7 at 3: disk on fire") {
			t.Fatalf("err %v, want the load error and the read's", err)
		}
	})
	t.Run("apply error", func(t *testing.T) {
		bad := errors.New("bad batch")
		_, err := Replay(&fakeLog{end: 10, failAt: -1}, 7, errTestLoad, func([]byte, int64) (int64, error) { return 0, bad })
		if !errors.Is(err, errTestLoad) || !errors.Is(err, bad) {
			t.Fatalf("err %v, want the load error and apply's", err)
		}
	})
}

func TestSkips(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	var s Skips
	s.LogSkips(logger, "x", "__t")
	if buf.Len() != 0 {
		t.Fatalf("no skips logged %q", buf.String())
	}
	for i := range maxSkipsLogged + 5 {
		s.Skip(int64(i), errors.New("garbage"))
	}
	s.LogSkips(logger, "x", "__t")
	out := buf.String()
	if n := strings.Count(out, "x: skipped a record that does not decode while loading"); n != maxSkipsLogged {
		t.Errorf("%d lines of single skips, want %d:\n%s", n, maxSkipsLogged, out)
	}
	if !strings.Contains(out, `msg="x: skipped more records that do not decode while loading" topic=__t skipped=15`) {
		t.Errorf("no line of the count:\n%s", out)
	}
}

func TestWalkBatches(t *testing.T) {
	batch := func(base int64, n int) []byte {
		recs := make([]wire.Record, n)
		for i := range recs {
			recs[i] = wire.Record{OffsetDelta: int32(i), Value: []byte("v")}
		}
		b, err := wire.EncodeBatch(wire.BatchSpec{BaseOffset: base, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Records: recs})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b1, b2 := batch(5, 2), batch(7, 3)
	data := append(append(append([]byte(nil), b1...), b2...), b1[:20]...) // and a partial batch
	var bases []int64
	next, err := WalkBatches(data, 5, func(h wire.BatchHeader, b []byte) {
		bases = append(bases, h.BaseOffset)
		if len(b) != h.TotalSize() {
			t.Errorf("batch at %d: %d bytes, header says %d", h.BaseOffset, len(b), h.TotalSize())
		}
	})
	if err != nil || next != 10 || len(bases) != 2 || bases[0] != 5 || bases[1] != 7 {
		t.Fatalf("next %d err %v batches at %v, want 10, nil, [5 7]", next, err, bases)
	}
	if next, err := WalkBatches(b1[:20], 5, func(wire.BatchHeader, []byte) { t.Error("called on a partial batch") }); err != nil || next != 5 {
		t.Fatalf("partial batch: next %d err %v, want 5, nil", next, err)
	}
}
