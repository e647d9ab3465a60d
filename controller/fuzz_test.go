package controller

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzScanFrames feeds arbitrary bytes to the frame reader: it must never
// panic, the valid prefix it reports must re-scan to the same records, and
// re-encoding those records must give frames that decode to them again.
func FuzzScanFrames(f *testing.F) {
	var seed []byte
	for _, rec := range allRecordKinds() {
		seed, _ = appendFrame(seed, rec)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)-3])
	f.Add([]byte{0, 0, 0, 2, 0, 0, 0, 0, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		var recs []Record
		valid, n, err := scanFrames(bytes.NewReader(data), func(_ int64, r Record) error {
			recs = append(recs, r)
			return nil
		})
		if valid > int64(len(data)) || n != int64(len(recs)) {
			t.Fatalf("valid %d of %d, n %d, records %d", valid, len(data), n, len(recs))
		}
		if err != nil {
			return
		}
		var again []Record
		valid2, _, err := scanFrames(bytes.NewReader(data[:valid]), func(_ int64, r Record) error {
			again = append(again, r)
			return nil
		})
		if err != nil || valid2 != valid || !reflect.DeepEqual(recs, again) {
			t.Fatalf("rescan of valid prefix: %d %v", valid2, err)
		}
		var enc []byte
		for _, r := range recs {
			if enc, err = appendFrame(enc, r); err != nil {
				t.Fatal(err)
			}
		}
		var decoded []Record
		if _, _, err := scanFrames(bytes.NewReader(enc), func(_ int64, r Record) error {
			decoded = append(decoded, r)
			return nil
		}); err != nil || !reflect.DeepEqual(normalize(recs), normalize(decoded)) {
			t.Fatalf("re-encode round trip: %v\n%#v\n%#v", err, recs, decoded)
		}
	})
}

// FuzzScanBatches feeds arbitrary bytes to the version 2 batch reader: it
// must never panic, the valid prefix it reports must re-scan to the same
// records, and re-encoding those records must decode to them again.
func FuzzScanBatches(f *testing.F) {
	recs := allRecordKinds()
	seed, _ := appendBatch(nil, recs[:3])
	seed, _ = appendBatch(seed, recs[3:])
	f.Add(seed)
	f.Add(seed[:len(seed)-3])
	f.Add(append(append([]byte(nil), seed...), 0, 0, 0, 0))
	f.Add([]byte{0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		var recs []Record
		valid, n, err := scanBatches(bytes.NewReader(data), 0, int64(len(data)), func(_ int64, r Record) error {
			recs = append(recs, r)
			return nil
		})
		if valid > int64(len(data)) || n != int64(len(recs)) {
			t.Fatalf("valid %d of %d, n %d, records %d", valid, len(data), n, len(recs))
		}
		if err != nil {
			return
		}
		var again []Record
		valid2, _, err := scanBatches(bytes.NewReader(data[:valid]), 0, valid, func(_ int64, r Record) error {
			again = append(again, r)
			return nil
		})
		if err != nil || valid2 != valid || !reflect.DeepEqual(recs, again) {
			t.Fatalf("rescan of valid prefix: %d %v", valid2, err)
		}
		if len(recs) == 0 {
			return
		}
		enc, err := appendBatch(nil, recs)
		if err != nil {
			t.Fatal(err)
		}
		var decoded []Record
		if _, _, err := scanBatches(bytes.NewReader(enc), 0, int64(len(enc)), func(_ int64, r Record) error {
			decoded = append(decoded, r)
			return nil
		}); err != nil || !reflect.DeepEqual(normalize(recs), normalize(decoded)) {
			t.Fatalf("re-encode round trip: %v\n%#v\n%#v", err, recs, decoded)
		}
	})
}

// normalize re-encodes records so that JSON details (nil vs empty slices)
// compare equal.
func normalize(recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		b, _ := encodeRecord(r)
		out[i] = string(b)
	}
	return out
}
