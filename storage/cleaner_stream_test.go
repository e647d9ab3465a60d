package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/samsa-broker/samsa/storage/vfs"
	"github.com/samsa-broker/samsa/wire"
	"github.com/samsa-broker/samsa/wire/wiretest"
)

// wholeFilter is the cleaner's filter as it was before compressed batches
// were streamed: the records section decompressed whole, split, the kept
// records' bytes compressed again in one call. It is the oracle of the
// streaming filter's bytes.
func wholeFilter(t *testing.T, b []byte, h batchHeader, in filterInput) ([]byte, int) {
	t.Helper()
	body, err := wire.Decompress(h.Compression(), b[batchHeaderSize:h.TotalSize()])
	if err != nil {
		t.Fatal(err)
	}
	recs, err := splitRawRecords(body, h.NumRecords, h.BaseOffset, nil)
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	kept := 0
	for _, r := range recs {
		if r.key != nil {
			if last, ok := in.offsets.latest(r.key); ok && h.BaseOffset+int64(r.offsetDelta) < last {
				continue
			}
			if r.tombstone && in.removeTombstones {
				continue
			}
		}
		raw = append(raw, r.raw...)
		kept++
	}
	if kept == int(h.NumRecords) {
		return b[:h.TotalSize()], kept
	}
	if kept == 0 {
		return nil, 0
	}
	c, err := wire.Compress(h.Compression(), raw)
	if err != nil {
		t.Fatal(err)
	}
	out := append(append([]byte(nil), b[:batchHeaderSize]...), c...)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-batchLengthOffset))
	binary.BigEndian.PutUint32(out[57:], uint32(kept))
	wire.RecomputeCRC(out)
	return out, kept
}

// TestCleanerStreamedAsWhole checks that the streaming walk of compressed
// batches builds the same key map as the in-memory parse and rebuilds
// batches to the very bytes the whole decompression did (records up to
// 1 MiB kept), for every codec (snappy in both framings), with keys short,
// long (over wire.CompactKeyMax, held by digest), null and tombstones.
func TestCleanerStreamedAsWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	key := func() []byte {
		switch rng.IntN(10) {
		case 0:
			return nil
		case 1:
			return []byte(strings.Repeat("L", wire.CompactKeyMax+1) + fmt.Sprint(rng.IntN(3)))
		}
		return []byte(fmt.Sprintf("k%d", rng.IntN(20)))
	}
	value := func() []byte {
		switch rng.IntN(8) {
		case 0:
			return nil
		case 1:
			return bytes.Repeat([]byte{byte(rng.IntN(256))}, rng.IntN(100_000))
		}
		return []byte(fmt.Sprintf("value-%d", rng.Int()))
	}
	codecs := []wire.Compression{wire.CompressionGzip, wire.CompressionSnappy, wire.CompressionLZ4, wire.CompressionZstd, -1}
	checked := 0
	for iter := range 60 {
		codec := codecs[iter%len(codecs)]
		var recs []kv
		for range 1 + rng.IntN(40) {
			recs = append(recs, kv{key: key(), value: value()})
		}
		var b []byte
		if codec < 0 { // snappy in the xerial framing, as the Java client writes it
			var err error
			if b, err = wire.Recompress(keyedBatch(t, keyedSpec{}, recs...), wire.CompressionSnappy); err != nil {
				t.Fatal(err)
			}
		} else {
			b = keyedBatch(t, keyedSpec{codec: codec}, recs...)
		}
		setBaseOffset(b, 100)
		wire.RecomputeCRC(b)
		h, err := parseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		// The key map: this batch itself (nothing superseded but within
		// it) and a later batch of some keys.
		m, want := newOffsetMap(), newOffsetMap()
		if _, err := addToMap(m, b, h, newAbortedSet(nil), nil); err != nil {
			t.Fatal(err)
		}
		body, _ := wire.Decompress(h.Compression(), b[batchHeaderSize:])
		raws, _ := splitRawRecords(body, h.NumRecords, h.BaseOffset, nil)
		for _, r := range raws {
			if r.key != nil {
				want.put(r.key, h.BaseOffset+int64(r.offsetDelta))
			}
		}
		if fmt.Sprint(m.offsets, m.long, m.bytes) != fmt.Sprint(want.offsets, want.long, want.bytes) {
			t.Fatalf("iteration %d: streamed key map %v %v, want %v %v", iter, m.offsets, m.long, want.offsets, want.long)
		}
		for range rng.IntN(5) {
			if k := key(); k != nil {
				m.put(k, 1000)
			}
		}
		in := filterInput{offsets: m, aborted: newAbortedSet(nil), removeTombstones: rng.IntN(2) == 0}
		wantOut, wantKept := wholeFilter(t, b, h, in)
		out, kept, _, err := filterBatch(b, h, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if kept != wantKept || !bytes.Equal(out, wantOut) {
			t.Fatalf("iteration %d (%v): kept %d records in %d bytes, want %d in %d", iter, codec, kept, len(out), wantKept, len(wantOut))
		}
		if kept > 0 && kept < int(h.NumRecords) {
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("only %d batches rebuilt", checked)
	}
}

// zstdBomb is wiretest.ZstdBomb with keyedBatch's header; bomb(k, n) is a
// record of key k whose value is n zero bytes.
func zstdBomb(t testing.TB, recs ...wiretest.BombRecord) []byte {
	t.Helper()
	return wiretest.ZstdBomb(t, 1_700_000_000_000, recs...)
}

func bomb(key string, zeros int) wiretest.BombRecord {
	return wiretest.BombRecord{Key: []byte(key), Zeros: zeros}
}

// TestCleanZipBomb cleans a compacted log holding zstd batches of a few
// KB whose records hold values of 512 MiB of zeros (a zip bomb Kafka 4.4
// takes on produce): one whose huge record stays and whose small one goes
// (rebuilt, the huge value streamed into the compressor), one whose huge
// record goes and whose small one stays (rebuilt, the huge value skipped)
// and one superseded whole (dropped). The clean must allocate a bounded
// amount, not the decompressed sizes (it decompressed each batch whole
// before: over 1.5 GB), and leave the right records.
func TestCleanZipBomb(t *testing.T) {
	size := wiretest.BombSize()
	clock := newClock()
	cfg := compactConfig()
	cfg.SegmentBytes = 1 << 20
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", cfg, clock)
	defer l.Close()
	appendHW(t, l, zstdBomb(t, bomb("a", size), bomb("b", 10)))                             // 0, 1
	appendHW(t, l, zstdBomb(t, bomb("c", size), bomb("d", 10)))                             // 2, 3
	appendHW(t, l, zstdBomb(t, bomb("e", size)))                                            // 4
	appendHW(t, l, keyedBatch(t, keyedSpec{}, rec("b", "x"), rec("c", "y"), rec("e", "z"))) // 5, 6, 7
	l.Roll()
	var st CleanStats
	var ok bool
	var err error
	alloc := wiretest.Allocated(func() { st, ok, err = l.Clean(context.Background(), clock.now(), CleanOptions{Force: true}) })
	if err != nil || !ok {
		t.Fatalf("Clean: ok=%v err=%v", ok, err)
	}
	t.Logf("clean of 3 bombs of %d MiB each (%d bytes in, %d out): %d KiB allocated", size>>20, st.BytesIn, st.BytesOut, alloc>>10)
	// Two zstd stream decoders (a window of 8 MiB each as klauspost's
	// encoder writes it), a stream encoder, the windows, the segment.
	if bound := uint64(64 << 20); !raceEnabled && alloc > bound {
		t.Fatalf("the clean allocated %d bytes for batches of %d decompressed, want <= %d", alloc, size, bound)
	}
	// What is left, walked streaming: a (huge), d, b, c, e.
	type got struct {
		off  int64
		key  string
		huge bool
	}
	var recs []got
	b, err := l.Read(0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	for len(b) > 0 {
		h, err := parseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		if batchCRC(b[:h.TotalSize()]) != h.CRC {
			t.Fatalf("batch %d: bad CRC", h.BaseOffset)
		}
		if err := wire.WalkCompactRecords(h.Compression(), b[batchHeaderSize:h.TotalSize()], h.NumRecords, func(r *wire.CompactRecord) {
			recs = append(recs, got{h.BaseOffset + int64(r.OffsetDelta), string(r.Key), false})
		}); err != nil {
			t.Fatal(err)
		}
		if h.BaseOffset == 0 {
			// The huge value is there, whole.
			if err := wire.VisitRecords(b, func(int32, wire.RecordInfo) {}); err != nil {
				t.Fatal(err)
			}
			n := 0
			r, err := zstd.NewReader(bytes.NewReader(b[batchHeaderSize:h.TotalSize()]), zstd.WithDecoderConcurrency(1))
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 1<<20)
			for {
				k, err := r.Read(buf)
				n += k
				if err != nil {
					break
				}
			}
			r.Close()
			if n < size {
				t.Fatalf("batch 0 holds %d bytes of records, want over %d", n, size)
			}
			recs[len(recs)-1].huge = true
		}
		b = b[h.TotalSize():]
	}
	want := []got{{0, "a", true}, {3, "d", false}, {5, "b", false}, {6, "c", false}, {7, "e", false}}
	if fmt.Sprint(recs) != fmt.Sprint(want) {
		t.Fatalf("records after the clean %v, want %v", recs, want)
	}
}

// TestCleanerStreamedLarge rebuilds batches whose kept records are over
// 1 MiB, which stream into the codec's stream writer (their bytes are
// not those of one Compress call; their records are), and one whose
// rebuilt section would compress to more than twice the batch's size:
// it is kept whole rather than built. Some keys are over
// wire.CompactKeyMax (held by their digest).
func TestCleanerStreamedLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for _, codec := range []wire.Compression{wire.CompressionGzip, wire.CompressionSnappy, wire.CompressionLZ4, wire.CompressionZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			var recs []kv
			for i := range 12 {
				v := random(300_000 + rng.IntN(100_000))
				if i%3 == 0 {
					v = bytes.Repeat([]byte("abc"), rng.IntN(200_000))
				}
				k := []byte(fmt.Sprintf("k%d", i%5))
				if i%5 == 4 { // a key held by its digest
					k = append(bytes.Repeat([]byte("L"), wire.CompactKeyMax), k...)
				}
				recs = append(recs, kv{key: k, value: v})
			}
			b := keyedBatch(t, keyedSpec{codec: codec}, recs...)
			h, _ := parseBatchHeader(b)
			m := newOffsetMap()
			if _, err := addToMap(m, b, h, newAbortedSet(nil), nil); err != nil {
				t.Fatal(err)
			}
			out, kept, _, err := filterBatch(b, h, filterInput{offsets: m, aborted: newAbortedSet(nil)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if kept != 5 {
				t.Fatalf("kept %d records, want 5", kept)
			}
			oh, err := parseBatchHeader(out)
			if err != nil || batchCRC(out) != oh.CRC || oh.TotalSize() != len(out) || oh.Compression() != codec || oh.NumRecords != 5 {
				t.Fatalf("rebuilt batch %+v: %v", oh, err)
			}
			_, got, err := wire.DecodeRecords(out)
			if err != nil {
				t.Fatal(err)
			}
			_, all, _ := wire.DecodeRecords(b)
			if len(got) != 5 {
				t.Fatalf("%d records", len(got))
			}
			for i, r := range got {
				w := all[7+i]
				if !bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, w.Value) || r.OffsetDelta != w.OffsetDelta || r.TimestampDelta != w.TimestampDelta {
					t.Fatalf("record %d: %q at %d, want %q at %d", i, r.Key, r.OffsetDelta, w.Key, w.OffsetDelta)
				}
			}
		})
	}
	// Three copies of a 3 MiB random value: zstd with an 8 MiB window
	// stores them in about 3 MiB, the cleaner's 2 MiB window cannot.
	v := random(3 << 20)
	b := keyedBatch(t, keyedSpec{codec: wire.CompressionZstd}, kv{key: []byte("gone"), value: []byte("x")},
		kv{key: []byte("a"), value: v}, kv{key: []byte("b"), value: v}, kv{key: []byte("c"), value: v}, kv{key: []byte("gone"), value: []byte("y")})
	h, _ := parseBatchHeader(b)
	if len(b) > 4<<20 {
		t.Fatalf("the batch is %d bytes: the test needs a zstd window over 3 MiB", len(b))
	}
	m := newOffsetMap()
	if _, err := addToMap(m, b, h, newAbortedSet(nil), nil); err != nil {
		t.Fatal(err)
	}
	out, kept, _, err := filterBatch(b, h, filterInput{offsets: m, aborted: newAbortedSet(nil)}, nil)
	if err != nil || kept != 5 || &out[0] != &b[0] {
		t.Fatalf("kept %d records, err %v, same batch %v: want the batch kept whole", kept, err, &out[0] == &b[0])
	}
}

// TestOffsetForTimestampZipBomb looks a timestamp up (ListOffsets) in a
// zstd batch of a few KB whose first record holds 512 MiB of zeros: the
// records are streamed up to the one found, not decompressed whole (as
// they were before: the whole batch, then every record decoded).
func TestOffsetForTimestampZipBomb(t *testing.T) {
	size := wiretest.BombSize()
	clock := newClock()
	l := openTestLog(t, vfs.NewMem(), "/d/t-0", DefaultLogConfig(), clock)
	defer l.Close()
	b := zstdBomb(t, bomb("a", size), bomb("b", 10), bomb("c", 10))
	h, _ := parseBatchHeader(b)
	appendHW(t, l, b)
	var off, ts int64
	var found bool
	alloc := wiretest.Allocated(func() { off, ts, found = l.OffsetForTimestamp(h.BaseTimestamp + 1) })
	t.Logf("lookup past a record of %d MiB: %d KiB allocated", size>>20, alloc>>10)
	if !found || off != 1 || ts != h.BaseTimestamp+1 {
		t.Fatalf("OffsetForTimestamp = %d, %d, %v; want 1, %d, true", off, ts, found, h.BaseTimestamp+1)
	}
	// A zstd stream decoder (an 8 MiB window), the window, the batch.
	if bound := uint64(32 << 20); !raceEnabled && alloc > bound {
		t.Fatalf("the lookup allocated %d bytes, want <= %d", alloc, bound)
	}
}

// FuzzCleanerStreamedAsWhole holds the streaming filter of a compressed
// batch to the whole decompression: when the records section decompresses
// and splits whole, the streamed key map and the rebuilt batch are the
// same (bytes included); when it does not, the streamed filter fails too.
func FuzzCleanerStreamedAsWhole(f *testing.F) {
	for _, codec := range []wire.Compression{wire.CompressionGzip, wire.CompressionSnappy, wire.CompressionLZ4, wire.CompressionZstd} {
		b, err := wire.EncodeBatch(wire.BatchSpec{BaseOffset: 100, ProducerID: -1, BaseSequence: -1, Compression: codec, Records: []wire.Record{
			{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("a"), Value: []byte("2")},
			{Key: []byte("b")}, {Value: []byte("keyless")}, {Key: bytes.Repeat([]byte("L"), wire.CompactKeyMax+1), Value: []byte("3")},
		}})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, []byte("b"), true)
		f.Add(b, []byte("a"), false)
	}
	f.Fuzz(func(t *testing.T, b, later []byte, removeTombstones bool) {
		h, err := parseBatchHeader(b)
		if err != nil || h.TotalSize() < batchHeaderSize || h.TotalSize() > len(b) || h.Compression() == wire.CompressionNone || h.IsControl() {
			return
		}
		b = append([]byte(nil), b[:h.TotalSize()]...)
		wire.RecomputeCRC(b)
		if h, err = parseBatchHeader(b); err != nil {
			return
		}
		m := newOffsetMap()
		_, err = addToMap(m, b, h, newAbortedSet(nil), nil)
		body, derr := wire.Decompress(h.Compression(), b[batchHeaderSize:])
		var raws []rawRecord
		if derr == nil {
			raws, derr = splitRawRecords(body, h.NumRecords, h.BaseOffset, nil)
		}
		if derr != nil || h.NumRecords == 0 {
			if derr != nil && err == nil && h.NumRecords != 0 {
				// The stream decoder may take what the whole one
				// refuses only for zstd's window rule.
				if h.Compression() != wire.CompressionZstd {
					t.Fatalf("streamed walk took records the whole parse refuses: %v", derr)
				}
			}
			return
		}
		if err != nil {
			t.Fatalf("streamed walk failed on records the whole parse takes: %v", err)
		}
		want := newOffsetMap()
		var keptRaw int
		for _, r := range raws {
			if r.key != nil {
				want.put(r.key, h.BaseOffset+int64(r.offsetDelta))
			}
			keptRaw += len(r.raw)
		}
		if fmt.Sprint(m.offsets, m.long) != fmt.Sprint(want.offsets, want.long) {
			t.Fatalf("streamed key map %v, want %v", m.offsets, want.offsets)
		}
		m.put(later, h.BaseOffset+1<<20)
		in := filterInput{offsets: m, aborted: newAbortedSet(nil), removeTombstones: removeTombstones}
		out, kept, _, err := filterBatch(b, h, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if keptRaw > 1<<20 {
			return
		}
		wantOut, wantKept := wholeFilter(t, b, h, in)
		if kept != wantKept || !bytes.Equal(out, wantOut) {
			t.Fatalf("kept %d records in %d bytes, want %d in %d", kept, len(out), wantKept, len(wantOut))
		}
	})
}

// BenchmarkCleanCompressed cleans a log of 4000 compressed batches of 10
// keyed records (200-byte values, 5000 keys: most batches lose some
// records and are rebuilt), per codec; bytes per second are of the log.
func BenchmarkCleanCompressed(b *testing.B) {
	for _, codec := range []wire.Compression{wire.CompressionGzip, wire.CompressionSnappy, wire.CompressionLZ4, wire.CompressionZstd} {
		b.Run(codec.String(), func(b *testing.B) {
			clock := newClock()
			cfg := compactConfig()
			cfg.SegmentBytes = 1 << 20
			cfg.IndexIntervalBytes = 4096
			base := vfs.NewMem()
			l := openTestLog(b, base, "/d/t-0", cfg, clock)
			rng := rand.New(rand.NewPCG(1, 1))
			for range 4000 {
				var recs []kv
				for range 10 {
					recs = append(recs, rec(fmt.Sprintf("key-%d", rng.IntN(5000)), fmt.Sprintf("%0200d", rng.Int())))
				}
				appendHW(b, l, keyedBatch(b, keyedSpec{codec: codec}, recs...))
			}
			l.Roll()
			size := l.Size()
			l.Close()
			b.SetBytes(size)
			benchClean(b, base, cfg, clock)
		})
	}
}

// BenchmarkCleanZipBomb cleans a log holding a zstd batch of a 64 MiB
// zero value whose small record is superseded: the batch is rebuilt, the
// value streamed through the decompressor and the compressor twice.
func BenchmarkCleanZipBomb(b *testing.B) {
	clock := newClock()
	cfg := compactConfig()
	cfg.SegmentBytes = 1 << 20
	base := vfs.NewMem()
	l := openTestLog(b, base, "/d/t-0", cfg, clock)
	appendHW(b, l, zstdBomb(b, bomb("a", 64<<20), bomb("b", 10)))
	appendHW(b, l, keyedBatch(b, keyedSpec{}, rec("b", "x")))
	l.Roll()
	l.Close()
	b.SetBytes(64 << 20)
	benchClean(b, base, cfg, clock)
}

// benchClean times b.N forced cleans, each of a copy of the log of
// partition t-0 in base (its opening and closing not timed).
func benchClean(b *testing.B, base *vfs.MemFS, cfg LogConfig, clock *fakeClock) {
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		l := openTestLog(b, base.Clone(), "/d/t-0", cfg, clock)
		l.SetHighWatermark(l.LogEndOffset())
		b.StartTimer()
		if _, ok, err := l.Clean(context.Background(), clock.now(), CleanOptions{Force: true}); err != nil || !ok {
			b.Fatal(ok, err)
		}
		b.StopTimer()
		l.Close()
		b.StartTimer()
	}
}
