package broker

import (
	"encoding/binary"
	"testing"
)

// drainFramePools empties the pools: the connections of tests run before
// left their Produce and Fetch frames there.
func drainFramePools() {
	for i := range framePools {
		for framePools[i].Get() != nil {
		}
	}
}

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
	drainFramePools()
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
	fetch := frame(1, 2000)
	recycleFrame(fetch)
	if b = pooledFrame(1500); b != nil && (len(b) != 1500 || &b[0] != &fetch[0]) {
		t.Fatalf("pooled buffer of length %d is not the recycled Fetch one", len(b))
	}
	commit := frame(8, 2000)
	recycleFrame(commit)
	if b = pooledFrame(1500); b != nil && &b[0] == &commit[0] {
		t.Fatal("an OffsetCommit buffer was reused")
	}
}

// TestFrameClasses: every size up to maxPooledFrame maps to the smallest
// class that holds it, every capacity to the largest class it holds, and a
// pooled buffer is never more than 2.25 times the body it is handed out for.
func TestFrameClasses(t *testing.T) {
	for i := range frameClasses {
		s := frameClassSize(i)
		if i > 0 && s <= frameClassSize(i-1) {
			t.Fatalf("class %d (%d) not above class %d (%d)", i, s, i-1, frameClassSize(i-1))
		}
		if got := frameClassFor(s); got != i {
			t.Fatalf("frameClassFor(%d) = %d, want %d", s, got, i)
		}
		if got := frameClassOf(s); got != i {
			t.Fatalf("frameClassOf(%d) = %d, want %d", s, got, i)
		}
		if i > 0 {
			if got := frameClassFor(s - 1); got != i {
				t.Fatalf("frameClassFor(%d) = %d, want %d", s-1, got, i)
			}
			if got := frameClassOf(s - 1); got != i-1 {
				t.Fatalf("frameClassOf(%d) = %d, want %d", s-1, got, i-1)
			}
		}
		if got := frameClassFor(s + 1); i < frameClasses-1 && got != i+1 {
			t.Fatalf("frameClassFor(%d) = %d, want %d", s+1, got, i+1)
		}
	}
	if frameClassSize(0) != minFrameClass || frameClassSize(frameClasses-1) != maxPooledFrame {
		t.Fatalf("classes span %d-%d", frameClassSize(0), frameClassSize(frameClasses-1))
	}
	if frameClassFor(maxPooledFrame+1) != -1 || frameClassFor(1) != 0 || frameClassOf(minFrameClass-1) != -1 || frameClassOf(1<<30) != frameClasses-1 {
		t.Fatal("bounds")
	}
	// Sizes in between: the class holds the size, the class below does not.
	for n := 1; n <= maxPooledFrame; n += 1 + n/7 {
		i := frameClassFor(n)
		if frameClassSize(i) < n || (i > 0 && frameClassSize(i-1) >= n) {
			t.Fatalf("frameClassFor(%d) = %d (%d)", n, i, frameClassSize(i))
		}
		if c := frameClassOf(n); c >= 0 && (frameClassSize(c) > n || (c < frameClasses-1 && frameClassSize(c+1) <= n)) {
			t.Fatalf("frameClassOf(%d) = %d (%d)", n, c, frameClassSize(c))
		}
	}
	// The worst waste: a buffer of capacity just under class i+1 pooled
	// in class i, handed out for a body just over class i-1.
	for i := 1; i < frameClasses-1; i++ {
		if r := float64(frameClassSize(i+1)-1) / float64(frameClassSize(i-1)+1); r > 2.25 {
			t.Fatalf("class %d: a buffer %.2f times the body", i, r)
		}
	}
}

// TestReadBodyGrowsIntoClassBuffer: a body read while its class pool is empty grows
// into a buffer of its class, which is pooled once the request is done
// with, and the next body of that class is read into it.
func TestReadBodyGrowsIntoClassBuffer(t *testing.T) {
	drainFramePools()
	b := newFrame(5 << 20)
	if len(b) != 5<<20 || cap(b) != 6<<20 {
		t.Fatalf("newFrame(5 MiB): len %d cap %d, want 5 MiB in a 6 MiB buffer", len(b), cap(b))
	}
	binary.BigEndian.PutUint16(b, 0) // a Produce request
	recycleFrame(b)
	if p := pooledFrame(4<<20 + 1); p != nil && (&p[0] != &b[0] || len(p) != 4<<20+1) {
		t.Fatal("a 4 MiB + 1 body did not get the pooled 6 MiB buffer")
	}
	if p := pooledFrame(6<<20 + 1); p != nil && &p[0] == &b[0] {
		t.Fatal("a 6 MiB + 1 body got a 6 MiB buffer")
	}
}
