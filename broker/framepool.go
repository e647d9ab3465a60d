package broker

import (
	"encoding/binary"
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
// reused. The pool is a sync.Pool: the GC empties it, so idle memory stays
// independent of past load.

// maxPooledFrame is the largest buffer kept for reuse.
const maxPooledFrame = 16 << 20

var framePool sync.Pool // of *[]byte

// pooledFrame returns a pooled buffer of length size, or nil if the pool
// has none that fits (the caller then grows one as bytes arrive). A buffer
// much larger than size is left in the pool, so that a small request does
// not hold a large buffer while it waits.
func pooledFrame(size int) []byte {
	bp, _ := framePool.Get().(*[]byte)
	if bp == nil {
		return nil
	}
	if c := cap(*bp); c < size || c > max(4*size, firstChunk) {
		framePool.Put(bp)
		return nil
	}
	return (*bp)[:size]
}

// recycleFrame hands a handled request's buffer back to the pool when it
// was a Produce or Fetch request.
func recycleFrame(buf []byte) {
	if len(buf) < 2 || binary.BigEndian.Uint16(buf) > 1 || cap(buf) > maxPooledFrame {
		return
	}
	framePool.Put(&buf)
}
