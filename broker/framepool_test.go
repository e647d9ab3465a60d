package broker

import (
	"encoding/binary"
	"testing"
)

// TestFramePoolOnlyProduceAndFetch: a handled Produce or Fetch frame's
// buffer is reused for a later body of a size it fits; other requests'
// buffers never are (their handlers may keep slices of them), nor is a
// buffer far larger than the body.
func TestFramePoolOnlyProduceAndFetch(t *testing.T) {
	frame := func(key int16, size int) []byte {
		b := make([]byte, size)
		binary.BigEndian.PutUint16(b, uint16(key))
		return b
	}
	// The connections of tests run before this one left their Produce
	// and Fetch frames in the pool: start from an empty one.
	for framePool.Get() != nil {
	}
	join := frame(11, 100<<10)
	recycleFrame(join)
	if b := pooledFrame(90 << 10); b != nil && &b[:1][0] == &join[0] {
		t.Fatal("a JoinGroup buffer was reused")
	}
	prod := frame(0, 100<<10)
	recycleFrame(prod)
	b := pooledFrame(1 << 10) // far smaller than the pooled buffer
	if b != nil && &b[:1][0] == &prod[0] {
		t.Fatal("a 100 KiB buffer was handed out for a 1 KiB body")
	}
	// sync.Pool may drop entries at any GC, so only a hit is checked.
	if b = pooledFrame(90 << 10); b != nil && (len(b) != 90<<10 || &b[0] != &prod[0]) {
		t.Fatalf("pooled buffer of length %d is not the recycled one", len(b))
	}
	fetch := frame(1, 200)
	recycleFrame(fetch)
	if b = pooledFrame(150); b != nil && (len(b) != 150 || &b[0] != &fetch[0]) {
		t.Fatalf("pooled buffer of length %d is not the recycled Fetch one", len(b))
	}
	commit := frame(8, 200)
	recycleFrame(commit)
	if b = pooledFrame(150); b != nil && &b[0] == &commit[0] {
		t.Fatal("an OffsetCommit buffer was reused")
	}
}
