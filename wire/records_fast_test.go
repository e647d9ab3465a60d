package wire

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// recordsFramedAgrees fails t when the fast walk and parseRecord's walk
// disagree about body holding n well-framed records.
func recordsFramedAgrees(t *testing.T, body []byte, n int32) {
	t.Helper()
	_, fast := recordsFramed(body, n)
	slow := walkRecords(body, n)
	if fast != (slow == nil) {
		t.Fatalf("%d records in %x: fast walk says %v, parseRecord says %v", n, body, fast, slow)
	}
}

// TestRecordsFramedMatchesParseRecord: the fast walk accepts exactly what
// parseRecord's walk accepts, on good bodies (records with keys, null
// values, headers, varints of every width) and on every truncation and
// many single-byte changes of them, with the right, one less and one more
// record count.
func TestRecordsFramedMatchesParseRecord(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		nrec := 1 + rng.IntN(6)
		var recs []Record
		for i := range nrec {
			r := Record{OffsetDelta: int32(i), TimestampDelta: int64(rng.IntN(1 << uint(rng.IntN(40))))}
			if rng.IntN(3) > 0 {
				r.Key = make([]byte, rng.IntN(200))
			}
			if rng.IntN(4) > 0 {
				r.Value = make([]byte, rng.IntN(1<<uint(1+rng.IntN(14))))
			}
			for range rng.IntN(3) {
				h := RecordHeader{Key: string(make([]byte, rng.IntN(20)))}
				if rng.IntN(2) == 0 {
					h.Value = make([]byte, rng.IntN(300))
				}
				r.Headers = append(r.Headers, h)
			}
			recs = append(recs, r)
		}
		spec := testSpec(CompressionNone, 0)
		spec.Records = recs
		batch := mustBatch(t, spec)
		body := batch[BatchHeaderSize:]
		n := int32(nrec)
		maxDelta, ok := recordsFramed(body, n)
		if !ok {
			t.Fatalf("round %d: a good body refused", round)
		}
		want := int64(0)
		for _, r := range recs {
			want = max(want, r.TimestampDelta)
		}
		if maxDelta != want {
			t.Fatalf("round %d: largest timestamp delta %d, want %d", round, maxDelta, want)
		}
		for _, m := range []int32{n - 1, n + 1, 0} {
			recordsFramedAgrees(t, body, m)
		}
		for cut := range len(body) {
			if cut < 64 || cut > len(body)-64 || rng.IntN(16) == 0 {
				recordsFramedAgrees(t, body[:cut], n)
			}
		}
		for range 200 {
			bad := append([]byte(nil), body...)
			i := rng.IntN(len(bad))
			switch rng.IntN(3) {
			case 0:
				bad[i] = byte(rng.IntN(256))
			case 1:
				bad[i] ^= 0x80 // a varint continues or ends
			default:
				bad[i] = 0x01 // -1: a null
			}
			recordsFramedAgrees(t, bad, n)
		}
	}
	// Varints past 2 bytes, and non-canonical and overlong ones.
	long := binary.AppendVarint(nil, 1<<30)
	for _, b := range [][]byte{
		append(append([]byte{}, long...), make([]byte, 10)...),
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0, 0, 0, 0, 0, 0},
		{0x0c, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 0, 0, 0, 0, 0},
		{0x0c, 0, 0, 0, 1, 1, 0},
		{0x0c, 0, 0, 0, 1, 1, 2},
		{0x0e, 0, 0, 0, 1, 1, 2, 0, 1},
		{0x0e, 0, 0, 0, 1, 1, 2, 1, 1},
	} {
		for _, n := range []int32{1, 2} {
			recordsFramedAgrees(t, b, n)
		}
	}
}

// FuzzRecordsFramed: the fast walk and parseRecord's walk agree on any
// bytes and count.
func FuzzRecordsFramed(f *testing.F) {
	spec := testSpec(CompressionNone, 3)
	f.Add(mustBatch(f, spec)[BatchHeaderSize:], int32(3))
	f.Add([]byte{0x0c, 0, 0, 0, 1, 1, 0}, int32(1))
	f.Fuzz(func(t *testing.T, body []byte, n int32) {
		recordsFramedAgrees(t, body, n%64)
	})
}

func BenchmarkRecordsWalk(b *testing.B) {
	batch := mustBatch(b, benchSpec(CompressionNone))
	h, _ := ParseBatchHeader(batch)
	body := batch[BatchHeaderSize:]
	for _, walk := range []struct {
		name string
		fn   func([]byte, int32) bool
	}{
		{"parseRecord", func(b []byte, n int32) bool { return walkRecords(b, n) == nil }},
		{"fast", func(b []byte, n int32) bool { _, ok := recordsFramed(b, n); return ok }},
	} {
		b.Run(walk.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if !walk.fn(body, h.NumRecords) {
					b.Fatal("refused")
				}
			}
		})
	}
}
