package storage

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/samsa-broker/samsa/wire"
)

// This file holds the pure part of log compaction: parsing the records of
// a batch, the key → last offset map, and the filter that decides which
// records of a batch a clean keeps. cleaner.go does the file IO.

// errCleanerRecord marks a record section the cleaner cannot parse.
var errCleanerRecord = errors.New("storage: undecodable record in batch being cleaned")

// rawRecord is one record of a batch as the cleaner sees it: its encoded
// bytes (length prefix included), offset delta, key and whether its value
// is null (a tombstone).
type rawRecord struct {
	raw         []byte
	offsetDelta int32
	key         []byte // nil: no key
	tombstone   bool
}

// splitRawRecords parses the records section of a batch of n records.
func splitRawRecords(body []byte, n int32, base int64, out []rawRecord) ([]rawRecord, error) {
	bad := func(what string) ([]rawRecord, error) {
		return nil, fmt.Errorf("%w: batch %d: %s", errCleanerRecord, base, what)
	}
	for i := int32(0); i < n; i++ {
		length, k := binary.Varint(body)
		if k <= 0 || length < 0 || int64(len(body)-k) < length {
			return bad("record length")
		}
		raw := body[:k+int(length)]
		r := body[k : k+int(length)]
		body = body[k+int(length):]
		if len(r) < 1 {
			return bad("empty record")
		}
		r = r[1:]                            // attributes
		if _, k = binary.Varint(r); k <= 0 { // timestamp delta
			return bad("timestamp delta")
		}
		r = r[k:]
		od, k := binary.Varint(r)
		if k <= 0 {
			return bad("offset delta")
		}
		r = r[k:]
		kl, k := binary.Varint(r)
		if k <= 0 || kl < -1 || int64(len(r)-k) < max(kl, 0) {
			return bad("key")
		}
		r = r[k:]
		var key []byte
		if kl >= 0 {
			key = r[:kl:kl]
			r = r[kl:]
		}
		vl, k := binary.Varint(r)
		if k <= 0 || vl < -1 {
			return bad("value")
		}
		out = append(out, rawRecord{raw: raw, offsetDelta: int32(od), key: key, tombstone: vl == -1})
	}
	if len(body) != 0 {
		return bad("trailing bytes")
	}
	return out, nil
}

// offsetMap is the key → last offset map of the dirty section of a clean
// (Kafka's OffsetMap, with exact keys instead of hashes, so two keys never
// collide; a key longer than wire.CompactKeyMax is held by its SHA-256
// digest, in a map of its own, as the streaming walk of a compressed batch
// reports it). bytes estimates its memory for the dedupe buffer limit.
type offsetMap struct {
	offsets map[string]int64
	long    map[[sha256.Size]byte]int64
	bytes   int64
}

func newOffsetMap() *offsetMap {
	return &offsetMap{offsets: map[string]int64{}, long: map[[sha256.Size]byte]int64{}}
}

// offsetMapEntryOverhead approximates the memory of one map entry besides
// its key bytes (string header, int64, bucket share).
const offsetMapEntryOverhead = 48

func (m *offsetMap) put(key []byte, offset int64) {
	if len(key) > wire.CompactKeyMax {
		m.putLong(sha256.Sum256(key), offset)
		return
	}
	if prev, ok := m.offsets[string(key)]; ok {
		if offset > prev {
			m.offsets[string(key)] = offset
		}
		return
	}
	m.offsets[string(key)] = offset
	m.bytes += int64(len(key)) + offsetMapEntryOverhead
}

func (m *offsetMap) putLong(d [sha256.Size]byte, offset int64) {
	if prev, ok := m.long[d]; ok {
		if offset > prev {
			m.long[d] = offset
		}
		return
	}
	m.long[d] = offset
	m.bytes += sha256.Size + offsetMapEntryOverhead
}

// latest returns the last offset of key in the dirty section.
func (m *offsetMap) latest(key []byte) (int64, bool) {
	if len(key) > wire.CompactKeyMax {
		off, ok := m.long[sha256.Sum256(key)]
		return off, ok
	}
	off, ok := m.offsets[string(key)]
	return off, ok
}

// putRecord and latestRecord are put and latest for a record of a
// streamed batch.
func (m *offsetMap) putRecord(r *wire.CompactRecord, offset int64) {
	if r.LongKey {
		m.putLong(r.KeyDigest, offset)
	} else {
		m.put(r.Key, offset)
	}
}

func (m *offsetMap) latestRecord(r *wire.CompactRecord) (int64, bool) {
	if r.LongKey {
		off, ok := m.long[r.KeyDigest]
		return off, ok
	}
	off, ok := m.offsets[string(r.Key)]
	return off, ok
}

// abortedSet answers whether a transactional batch belongs to an aborted
// transaction, from the aborted transaction index entries.
type abortedSet map[int64][]AbortedTxn // by producer id, by first offset

func newAbortedSet(entries []AbortedTxn) abortedSet {
	s := abortedSet{}
	for _, e := range entries {
		s[e.ProducerID] = append(s[e.ProducerID], e)
	}
	for _, l := range s {
		sort.Slice(l, func(i, j int) bool { return l[i].FirstOffset < l[j].FirstOffset })
	}
	return s
}

// contains reports whether offset lies in an aborted transaction of pid.
func (s abortedSet) contains(pid, offset int64) bool {
	l := s[pid]
	i := sort.Search(len(l), func(i int) bool { return l[i].LastOffset >= offset })
	return i < len(l) && l[i].FirstOffset <= offset
}

// isAborted reports whether the data batch h belongs to an aborted transaction.
func (s abortedSet) isAborted(h batchHeader) bool {
	return h.IsTransactional() && !h.IsControl() && h.ProducerID >= 0 && s.contains(h.ProducerID, h.BaseOffset)
}

// addToMap adds the keyed records of a data batch of the dirty section
// to m; control batches and aborted transactions are skipped (their
// records are not values of their keys). A compressed batch's records are
// streamed (wire.WalkCompactRecords), never decompressed whole.
func addToMap(m *offsetMap, batch []byte, h batchHeader, aborted abortedSet, scratch []rawRecord) ([]rawRecord, error) {
	if h.IsControl() || aborted.isAborted(h) || h.NumRecords == 0 {
		return scratch, nil
	}
	body := batch[batchHeaderSize:h.TotalSize()]
	if c := h.Compression(); c != wire.CompressionNone {
		err := wire.WalkCompactRecords(c, body, h.NumRecords, func(r *wire.CompactRecord) {
			if r.HasKey {
				m.putRecord(r, h.BaseOffset+int64(r.OffsetDelta))
			}
		})
		if err != nil {
			return scratch, fmt.Errorf("%w: batch %d: %w", errCleanerRecord, h.BaseOffset, err)
		}
		return scratch, nil
	}
	recs, err := splitRawRecords(body, h.NumRecords, h.BaseOffset, scratch[:0])
	if err != nil {
		return scratch, err
	}
	for _, r := range recs {
		if r.key != nil {
			m.put(r.key, h.BaseOffset+int64(r.offsetDelta))
		}
	}
	return recs, nil
}

// filterInput is what the record filter of one batch needs.
type filterInput struct {
	offsets *offsetMap
	aborted abortedSet
	// removeTombstones drops tombstones (past the delete horizon).
	removeTombstones bool
	// keepEmpty keeps the batch, without records, if none survives.
	keepEmpty bool
}

// filterBatch applies the compaction rules to one batch and returns what
// to write in its place: batch itself when every record stays, a rebuilt
// batch (same base offset, last offset delta, timestamps, producer fields
// and codec; new length, count and CRC) when some do, an empty batch
// (no records, uncompressed) when none does and in.keepEmpty, and nil
// when the batch goes. Control batches always stay. A record stays unless
// its batch belongs to an aborted transaction, a later record of the
// dirty section has its key, or it is a tombstone and removeTombstones.
// Records without a key stay (Kafka refuses them on produce to a
// compacted topic, but older ones may exist).
//
// A compressed batch is filtered streaming (wire.FilterCompactRecords):
// its records are read twice from the decompressor, once to decide and
// once to copy those kept into the compressor, so that a batch of a huge
// decompressed size costs a bounded amount of memory. A rebuilt section
// compressed to more than twice the batch's size (and 1 MiB) is not
// built: the batch stays whole.
func filterBatch(batch []byte, h batchHeader, in filterInput, scratch []rawRecord) (out []byte, kept int, _ []rawRecord, err error) {
	batch = batch[:h.TotalSize()]
	if h.IsControl() {
		return batch, int(h.NumRecords), scratch, nil
	}
	var keep []rawRecord
	if c := h.Compression(); !in.aborted.isAborted(h) && h.NumRecords > 0 && c != wire.CompressionNone {
		stays := func(r *wire.CompactRecord) bool {
			if r.HasKey {
				if last, ok := in.offsets.latestRecord(r); ok && h.BaseOffset+int64(r.OffsetDelta) < last {
					return false
				}
				if r.Tombstone && in.removeTombstones {
					return false
				}
			}
			return true
		}
		limit := max(2*len(batch), 1<<20)
		hdr := append(make([]byte, 0, batchHeaderSize), batch[:batchHeaderSize]...)
		out, kept, err = wire.FilterCompactRecords(hdr, c, batch[batchHeaderSize:], h.NumRecords, stays, limit)
		switch {
		case errors.Is(err, wire.ErrRebuiltTooLarge):
			return batch, int(h.NumRecords), scratch, nil
		case err != nil:
			return nil, 0, scratch, fmt.Errorf("%w: batch %d: %w", errCleanerRecord, h.BaseOffset, err)
		case kept == int(h.NumRecords):
			return batch, kept, scratch, nil
		}
	} else if !in.aborted.isAborted(h) && h.NumRecords > 0 {
		recs, err := splitRawRecords(batch[batchHeaderSize:], h.NumRecords, h.BaseOffset, scratch[:0])
		if err != nil {
			return nil, 0, scratch, err
		}
		scratch = recs
		keep = recs[:0]
		for _, r := range recs {
			if r.key != nil {
				if last, ok := in.offsets.latest(r.key); ok && h.BaseOffset+int64(r.offsetDelta) < last {
					continue
				}
				if r.tombstone && in.removeTombstones {
					continue
				}
			}
			keep = append(keep, r)
		}
		if len(keep) == int(h.NumRecords) {
			return batch, len(keep), scratch, nil
		}
		kept = len(keep)
		n := batchHeaderSize
		for _, r := range keep {
			n += len(r.raw)
		}
		out = append(make([]byte, 0, n), batch[:batchHeaderSize]...)
		for _, r := range keep {
			out = append(out, r.raw...)
		}
	}
	if kept == 0 && !in.keepEmpty {
		return nil, 0, scratch, nil
	}
	if kept == 0 {
		// Kafka writes the empty batches it keeps uncompressed.
		out = append(make([]byte, 0, batchHeaderSize), batch[:batchHeaderSize]...)
		attrs := binary.BigEndian.Uint16(out[21:])
		binary.BigEndian.PutUint16(out[21:], attrs&^0x07)
	}
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-batchLengthOffset))
	binary.BigEndian.PutUint32(out[57:], uint32(kept))
	wire.RecomputeCRC(out)
	return out, kept, scratch, nil
}
