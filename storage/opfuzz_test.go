package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// modelBatch is what the model remembers of an appended batch.
type modelBatch struct {
	base    int64
	records int32
	size    int
}

// logModel is the expected state of a Log.
type logModel struct {
	batches  []modelBatch // every batch below the LEO, including those below log start
	start    int64
	leo      int64
	hw       int64
	durable  int64 // LEO known to be on disk
	appended map[int64]modelBatch
}

func (m *logModel) batchAt(offset int64) (modelBatch, bool) {
	for _, b := range m.batches {
		if offset >= b.base && offset < b.base+int64(b.records) {
			return b, true
		}
	}
	return modelBatch{}, false
}

// TestRandomOperations runs random sequences of appends, reads,
// truncations, DeleteRecords, retention, flushes, reopens and crashes,
// checking the log against a model after each step.
func TestRandomOperations(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runRandomOps(t, seed, 400) })
	}
}

func runRandomOps(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, seed*7919))
	fsys := vfs.NewMem()
	clock := newClock()
	cfg := smallConfig()
	cfg.SegmentBytes = int64(500 + rng.IntN(3000))
	cfg.IndexIntervalBytes = int32(rng.IntN(600))
	cfg.RetentionMs = -1
	if rng.IntN(2) == 0 {
		cfg.FlushIntervalMessages = int64(1 + rng.IntN(10))
	}
	open := func(rp, start int64) *Log {
		l, err := OpenLog(LogOptions{FS: fsys, Dir: "/d/t-0", Config: cfg, Now: clock.now, RecoveryPoint: rp, LogStartOffset: start})
		if err != nil {
			t.Fatalf("seed %d: open: %v", seed, err)
		}
		return l
	}
	l := open(-1, -1)
	defer func() { l.Close() }()
	m := &logModel{}
	var trace []string
	fail := func(format string, args ...any) {
		t.Helper()
		tail := trace
		if len(tail) > 15 {
			tail = tail[len(tail)-15:]
		}
		t.Fatalf("seed %d: %s\nlast ops: %v", seed, fmt.Sprintf(format, args...), tail)
	}
	check := func() {
		t.Helper()
		if l.LogEndOffset() != m.leo || l.LogStartOffset() != m.start || l.HighWatermark() != m.hw {
			fail("LEO/start/HW %d/%d/%d, model %d/%d/%d", l.LogEndOffset(), l.LogStartOffset(), l.HighWatermark(), m.leo, m.start, m.hw)
		}
	}
	for step := 0; step < steps; step++ {
		switch op := rng.IntN(100); {
		case op < 45: // append
			n := int32(1 + rng.IntN(4))
			b := testBatch(int(n), clock.now().UnixMilli(), rng.IntN(200))
			info, err := l.Append(b)
			if err != nil {
				fail("append: %v", err)
			}
			if info.FirstOffset != m.leo {
				fail("append at %d, model LEO %d", info.FirstOffset, m.leo)
			}
			m.batches = append(m.batches, modelBatch{base: m.leo, records: n, size: len(b)})
			m.leo += int64(n)
			if l.RecoveryPoint() == l.LogEndOffset() {
				m.durable = m.leo
			}
			trace = append(trace, fmt.Sprintf("append(%d)=%d", n, info.FirstOffset))
			if rng.IntN(2) == 0 {
				m.hw = m.leo
				l.SetHighWatermark(m.hw)
			}
		case op < 65: // read
			if m.leo == m.start {
				continue
			}
			off := m.start + rng.Int64N(m.leo-m.start)
			b, err := l.Read(off, 1+rng.IntN(2000), m.leo, true)
			if err != nil || len(b) == 0 {
				fail("read %d: %d bytes, %v", off, len(b), err)
			}
			h, _ := parseBatchHeader(b)
			want, _ := m.batchAt(off)
			if h.BaseOffset != want.base || h.NumRecords != want.records || h.TotalSize() != want.size || batchCRC(b[:h.TotalSize()]) != h.CRC {
				fail("read %d gave batch %d (%d records), model %+v", off, h.BaseOffset, h.NumRecords, want)
			}
			trace = append(trace, fmt.Sprintf("read(%d)", off))
		case op < 70: // truncate
			if m.leo == 0 {
				continue
			}
			to := rng.Int64N(m.leo + 1)
			if err := l.TruncateTo(to); err != nil {
				fail("truncate %d: %v", to, err)
			}
			trace = append(trace, fmt.Sprintf("truncate(%d)", to))
			if to < m.start {
				m.batches, m.start, m.leo, m.hw = nil, to, to, to
			} else {
				firstBase := m.start
				if len(m.batches) > 0 {
					firstBase = m.batches[0].base
				}
				kept := m.batches[:0]
				for _, b := range m.batches {
					if b.base+int64(b.records)-1 < to {
						kept = append(kept, b)
					}
				}
				m.batches = kept
				if len(kept) > 0 {
					m.leo = kept[len(kept)-1].base + int64(kept[len(kept)-1].records)
				} else {
					m.leo = firstBase
				}
				m.hw = min(m.hw, m.leo)
				if m.leo < m.start {
					m.batches, m.start, m.leo, m.hw = nil, to, to, to
				}
			}
			m.durable = min(m.durable, m.leo)
		case op < 75: // DeleteRecords
			if m.hw == m.start {
				continue
			}
			to := m.start + rng.Int64N(m.hw-m.start+1)
			got, err := l.DeleteRecordsBefore(to)
			if err != nil || got != to {
				fail("DeleteRecordsBefore(%d) = %d, %v", to, got, err)
			}
			m.start = to
			trace = append(trace, fmt.Sprintf("delete(%d)", to))
		case op < 80: // retention by size
			c := cfg
			c.RetentionBytes = int64(rng.IntN(5000))
			l.SetConfig(c)
			if _, err := l.EnforceRetention(clock.now()); err != nil {
				fail("retention: %v", err)
			}
			l.SetConfig(cfg)
			newStart := l.LogStartOffset()
			if newStart < m.start || newStart > m.hw {
				fail("retention moved start %d -> %d (HW %d)", m.start, newStart, m.hw)
			}
			if _, ok := m.batchAt(newStart); !ok && newStart != m.leo && newStart != m.start {
				fail("retention start %d not at a batch", newStart)
			}
			m.start = newStart
			trace = append(trace, fmt.Sprintf("retention=%d", newStart))
		case op < 85: // flush
			if err := l.Flush(); err != nil {
				fail("flush: %v", err)
			}
			m.durable = m.leo
			trace = append(trace, "flush")
		case op < 92: // clean reopen
			rp, start, hw := l.RecoveryPoint(), l.LogStartOffset(), l.HighWatermark()
			if err := l.Close(); err != nil {
				fail("close: %v", err)
			}
			l = open(rp, start)
			l.SetHighWatermark(hw)
			m.durable = m.leo
			trace = append(trace, "reopen")
		default: // crash: only synced data survives
			rp, start, hw := l.RecoveryPoint(), l.LogStartOffset(), l.HighWatermark()
			old := l
			fsys = fsys.CrashClone()
			l = open(rp, start)
			old.Close()
			leo := l.LogEndOffset()
			if leo < max(m.durable, m.start) || leo > max(m.leo, m.start) {
				fail("crash: LEO %d outside [durable %d, model %d]", leo, m.durable, m.leo)
			}
			kept := m.batches[:0]
			for _, b := range m.batches {
				if b.base+int64(b.records) <= leo {
					kept = append(kept, b)
				}
			}
			m.batches = kept
			if len(kept) > 0 && kept[len(kept)-1].base+int64(kept[len(kept)-1].records) != leo {
				m.batches = nil // the log restarted empty at its start offset
			}
			m.leo = leo
			if len(m.batches) == 0 && leo != m.start && leo != 0 {
				fail("crash: LEO %d not at a batch end", leo)
			}
			m.hw = min(hw, leo)
			l.SetHighWatermark(hw)
			trace = append(trace, fmt.Sprintf("crash=%d", leo))
		}
		check()
	}
	// Final full read.
	hs := readAll(t, l, m.start)
	for _, h := range hs {
		want, ok := m.batchAt(h.BaseOffset)
		if !ok || want.base != h.BaseOffset || want.records != h.NumRecords {
			fail("final read: batch %d not in model", h.BaseOffset)
		}
	}
	if _, err := l.Read(m.leo+1, 100, m.leo+1, true); !errors.Is(err, ErrOffsetOutOfRange) {
		fail("read past LEO: %v", err)
	}
}
