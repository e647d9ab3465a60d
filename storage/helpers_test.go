package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// testBatch builds an uncompressed v2 batch of n records with timestamps
// baseTs, baseTs+1, ... and values of valueSize bytes.
func testBatch(n int, baseTs int64, valueSize int) []byte {
	return testBatchTs(baseTs, valueSize, func(i int) int64 { return int64(i) }, n)
}

func testBatchTs(baseTs int64, valueSize int, delta func(i int) int64, n int) []byte {
	var recs []byte
	maxTs := baseTs
	for i := 0; i < n; i++ {
		var body []byte
		body = append(body, 0)
		body = binary.AppendVarint(body, delta(i))
		body = binary.AppendVarint(body, int64(i))
		body = binary.AppendVarint(body, -1)
		body = binary.AppendVarint(body, int64(valueSize))
		body = append(body, bytes.Repeat([]byte{byte('a' + i%26)}, valueSize)...)
		body = binary.AppendVarint(body, 0)
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
		maxTs = max(maxTs, baseTs+delta(i))
	}
	b := make([]byte, batchHeaderSize, batchHeaderSize+len(recs))
	binary.BigEndian.PutUint32(b[8:], uint32(batchHeaderSize-batchLengthOffset+len(recs)))
	binary.BigEndian.PutUint32(b[12:], 0xffffffff) // partition leader epoch -1
	b[16] = 2
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], uint64(baseTs))
	binary.BigEndian.PutUint64(b[35:], uint64(maxTs))
	binary.BigEndian.PutUint64(b[43:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[17:], batchCRC(b))
	return b
}

// fakeClock is a manually advanced clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newClock() *fakeClock { return &fakeClock{t: time.UnixMilli(1_700_000_000_000)} }

func smallConfig() LogConfig {
	c := DefaultLogConfig()
	c.SegmentBytes = 4096
	c.IndexIntervalBytes = 256
	return c
}

func openTestLog(t testing.TB, fsys vfs.FS, dir string, cfg LogConfig, clock *fakeClock) *Log {
	t.Helper()
	l, err := OpenLog(LogOptions{FS: fsys, Dir: dir, Config: cfg, Now: clock.now, RecoveryPoint: -1, LogStartOffset: -1})
	if err != nil {
		t.Fatalf("OpenLog: %v", err)
	}
	return l
}

func mustAppend(t testing.TB, l *Log, b []byte) AppendInfo {
	t.Helper()
	info, err := l.Append(b)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return info
}

// readAll reads every batch from offset to the LEO and checks the batches
// are contiguous and intact. It returns their headers.
func readAll(t testing.TB, l *Log, from int64) []batchHeader {
	t.Helper()
	var hs []batchHeader
	next := from
	for next < l.LogEndOffset() {
		b, err := l.Read(next, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("Read(%d): %v", next, err)
		}
		if len(b) == 0 {
			t.Fatalf("Read(%d) returned nothing before LEO %d", next, l.LogEndOffset())
		}
		for len(b) > 0 {
			h, err := parseBatchHeader(b)
			if err != nil {
				t.Fatalf("Read(%d): %v", next, err)
			}
			if batchCRC(b[:h.TotalSize()]) != h.CRC {
				t.Fatalf("batch at offset %d: bad CRC", h.BaseOffset)
			}
			if h.LastOffset() < next {
				t.Fatalf("batch %d..%d returned for offset %d", h.BaseOffset, h.LastOffset(), next)
			}
			if len(hs) > 0 && h.BaseOffset != hs[len(hs)-1].LastOffset()+1 {
				t.Fatalf("gap: batch at %d after %d", h.BaseOffset, hs[len(hs)-1].LastOffset())
			}
			hs = append(hs, h)
			next = h.LastOffset() + 1
			b = b[h.TotalSize():]
		}
	}
	return hs
}

func segmentNames(t testing.TB, fsys vfs.FS, dir string) []string {
	t.Helper()
	names, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if _, ok := parseSegmentBase(n); ok {
			out = append(out, n)
		}
	}
	return out
}

func fmtOffsets(hs []batchHeader) string {
	var s string
	for _, h := range hs {
		s += fmt.Sprintf("%d-%d ", h.BaseOffset, h.LastOffset())
	}
	return s
}
