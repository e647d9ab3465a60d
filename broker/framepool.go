package broker

import (
	"encoding/binary"
	"math/bits"
	"sync"
)

// Request buffers of Produce and Fetch are reused: a body is read into a
// pooled buffer and handed back once the request is handled, since nothing
// keeps slices of a Produce request past its handler (storage copies the
// batches into the segment file, the producer state keeps header fields),
// and a Fetch request has no byte fields (kmsg copies its strings; the
// fetch session keeps those). Fetches are most of the requests a consumer
// at the log end sends, one per record at low rates.
// Other requests may leave slices of their frame in long-lived state
// (JoinGroup metadata, SyncGroup assignments), so their buffers are never
// reused. The pools are sync.Pools: the GC empties them, so idle memory
// stays independent of past load.
//
// The buffers are kept by size class (powers of two and 1.5 times powers of
// two, from 1 KiB to 16 MiB), so that a body finds a buffer that fits
// whatever the sizes of the bodies before it: with one pool of buffers of
// the sizes bodies happened to have, a producer's requests of 4-8 MiB (six
// partitions of up to 1 MiB batches each) missed 4 times in 10 and were
// read into buffers grown from 64 KiB by doubling (a copy and a fresh,
// zeroed allocation per step), whose garbage ran the collector, which
// emptied the pool (bench/README.md, stop 29).

const (
	// minFrameClass and maxPooledFrame are the smallest and largest
	// pooled buffer sizes.
	minFrameClass  = 1 << 10
	maxPooledFrame = 16 << 20
	// frameClasses: 1 KiB, 1.5 KiB, 2 KiB, 3 KiB, ..., 12 MiB, 16 MiB
	// (2 classes for each of the 14 doublings from 1 KiB to 16 MiB).
	frameClasses = 2*14 + 1
)

var framePools [frameClasses]sync.Pool // of *[]byte

// frameClassSize is the size of class i.
func frameClassSize(i int) int {
	if i%2 == 0 {
		return minFrameClass << (i / 2)
	}
	return 3 * minFrameClass << (i / 2) >> 1
}

// frameClassFor is the smallest class whose size is at least n, or -1 when
// n is over maxPooledFrame.
func frameClassFor(n int) int {
	if n <= minFrameClass {
		return 0
	}
	if n > maxPooledFrame {
		return -1
	}
	// 2^k KiB >= n > 2^(k-1) KiB, k >= 1: class 2k is 2^k KiB, class
	// 2k-1 is 1.5 * 2^(k-1) KiB.
	k := bits.Len(uint(n-1)) - bits.Len(minFrameClass) + 1
	if 3*minFrameClass<<k>>2 >= n {
		return 2*k - 1
	}
	return 2 * k
}

// frameClassOf is the largest class whose size is at most c, or -1 when c
// is under minFrameClass: a buffer of capacity c serves that class.
func frameClassOf(c int) int {
	if c < minFrameClass {
		return -1
	}
	if c >= maxPooledFrame {
		return frameClasses - 1
	}
	// 2^(k+1) KiB > c >= 2^k KiB: class 2k is 2^k KiB, class 2k+1 is
	// 1.5 * 2^k KiB.
	k := bits.Len(uint(c)) - bits.Len(minFrameClass)
	if c >= 3*minFrameClass<<k>>1 {
		return 2*k + 1
	}
	return 2 * k
}

// pooledFrame returns a pooled buffer of length size, or nil if the pool
// of its size class is empty (the caller then grows one as bytes arrive,
// with newFrame). A pooled buffer is at most 2.25 times size (its class
// and the one after it), so a small request does not hold a large buffer
// while it waits.
func pooledFrame(size int) []byte {
	i := frameClassFor(size)
	if i < 0 {
		return nil
	}
	bp, _ := framePools[i].Get().(*[]byte)
	if bp == nil {
		return nil
	}
	return (*bp)[:size]
}

// newFrame returns a buffer of length n: a pooled one if its class has
// one, else a new one with the capacity of n's class, so that it can be
// pooled once done with.
func newFrame(n int) []byte {
	if b := pooledFrame(n); b != nil {
		return b
	}
	if i := frameClassFor(n); i >= 0 {
		return make([]byte, n, frameClassSize(i))
	}
	return make([]byte, n)
}

// recycleFrame hands a handled request's buffer back to the pool when it
// was a Produce or Fetch request.
func recycleFrame(buf []byte) {
	if len(buf) < 2 || binary.BigEndian.Uint16(buf) > 1 {
		return
	}
	putFrame(buf)
}

// putFrame pools buf, whose contents nothing uses any more, under the
// largest class it can serve.
func putFrame(buf []byte) {
	if cap(buf) > maxPooledFrame {
		return
	}
	if i := frameClassOf(cap(buf)); i >= 0 {
		framePools[i].Put(&buf)
	}
}
