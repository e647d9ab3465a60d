// Package wiretest holds test helpers for the packages that read record
// batches through wire: zip-bomb batches (a few KB of zstd holding records
// of hundreds of MB, built without ever holding them whole) and the bytes
// a call allocates, which the streaming readers' regression tests bound.
//
//	b := wiretest.ZstdBomb(t, now,
//		wiretest.BombRecord{Key: []byte("a"), Zeros: wiretest.BombSize()},
//		wiretest.BombRecord{Key: []byte("b"), Value: []byte("x")})
//	alloc := wiretest.Allocated(func() { _, _ = l.Clean(ctx, now, opts) })
//	if alloc > 64<<20 { t.Fatalf(...) }
package wiretest
