package txn

import (
	"bytes"
	"testing"
)

// FuzzDecodeValue feeds arbitrary bytes to the TransactionLogValue decoder:
// it must not panic, and what it accepts must re-encode to a fixed point.
func FuzzDecodeValue(f *testing.F) {
	f.Add(logValue(testMeta()))
	m := testMeta()
	m.resetEmpty(1000, 5)
	f.Add(logValue(m))
	m = testMeta()
	m.prevProducerID = 9
	m.clientTV = 2
	f.Add(logValue(m))
	f.Add([]byte{0, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeValue("id", b)
		if err != nil {
			return
		}
		b2 := logValue(m)
		m2, err := decodeValue("id", b2)
		if err != nil {
			t.Fatalf("re-decoding %x: %v", b2, err)
		}
		if b3 := logValue(m2); !bytes.Equal(b2, b3) {
			t.Fatalf("not a fixed point:\n%x\n%x", b2, b3)
		}
	})
}
