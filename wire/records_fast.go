package wire

import (
	"encoding/binary"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// recordsFramed reports whether body holds exactly n records that
// parseRecord would accept (checkRecords' rules), in one pass without
// building errors, and returns the largest timestamp delta of those
// records (math.MinInt64 when n is 0), which the batch's max timestamp is
// set from. It is checkRecords' fast path: every produced
// uncompressed batch is walked record by record, as Kafka's LogValidator
// does, and this walk is a few percent of the broker's CPU per GB produced
// (bench/README.md, stop 29). When it reports false, checkRecords walks
// again to say what is wrong.
func recordsFramed(body []byte, n int32) (int64, bool) {
	maxDelta := int64(math.MinInt64)
	i := 0
	for range n {
		length, w := varint32(body, i)
		if w == 0 || length < minRecordSize-1 || int(length) > len(body)-i-w {
			return 0, false
		}
		i += w
		end := i + int(length)
		rec := body[:end]
		j := i + 1 // attributes
		// Timestamp delta: a varlong (at most 10 bytes).
		if j < len(rec) && rec[j] < 0x80 {
			c := rec[j]
			maxDelta = max(maxDelta, int64(c>>1)^-int64(c&1))
			j++
		} else {
			d, w := binary.Varint(rec[j:])
			if w <= 0 {
				return 0, false
			}
			maxDelta = max(maxDelta, d)
			j += w
		}
		if _, w = varint32(rec, j); w == 0 { // offset delta
			return 0, false
		}
		j += w
		for range 2 { // key, value: nullable
			l, w := varint32(rec, j)
			if w == 0 || l < -1 || int(l) > len(rec)-j-w {
				return 0, false
			}
			j += w + max(int(l), 0)
		}
		nh, w := varint32(rec, j)
		if w == 0 || nh < 0 || int(nh) > (len(rec)-j-w)/2 {
			return 0, false
		}
		j += w
		for range nh {
			l, w := varint32(rec, j) // header key: not nullable
			if w == 0 || l < 0 || int(l) > len(rec)-j-w {
				return 0, false
			}
			j += w + int(l)
			l, w = varint32(rec, j) // header value: nullable
			if w == 0 || l < -1 || int(l) > len(rec)-j-w {
				return 0, false
			}
			j += w + max(int(l), 0)
		}
		if j != end {
			return 0, false
		}
		i = end
	}
	return maxDelta, i == len(body)
}

// varint32 reads the zigzag varint at b[i:] as readVarint does (at most 5
// bytes, within the int32 range) and returns it with its width, 0 when
// there is none.
func varint32(b []byte, i int) (int32, int) {
	if i < len(b) && b[i] < 0x80 {
		u := uint32(b[i])
		return int32(u>>1) ^ -int32(u&1), 1
	}
	if i+1 < len(b) && b[i+1] < 0x80 {
		u := uint32(b[i]&0x7f) | uint32(b[i+1])<<7
		return int32(u>>1) ^ -int32(u&1), 2
	}
	if i > len(b) {
		return 0, 0
	}
	v, rest, ok := readVarint(b[i:])
	if !ok {
		return 0, 0
	}
	return v, len(b) - i - len(rest)
}

// checkCompressedRecords checks the n decompressed records of a compressed
// batch the way Kafka 4.4's broker reads them when it keeps the batch as it
// came (LogValidator's in-place path, DefaultRecord.readPartiallyFrom): each
// record's length must not be negative, its attributes, timestamp delta and
// offset delta are read, its key and value skipped (a negative length is
// null), its header count must not be negative and each header key length
// neither; a record's fields are not held to its length. The stream must
// hold exactly n records: fewer ("premature EOF"), more bytes after them,
// or a field running past the end fail with INVALID_RECORD, as does a
// varint over 5 bytes (a varlong over 10). Offset deltas are not checked
// here: the caller decides on recordStats.inOrder (Kafka 4.4 refuses a
// batch it keeps whose deltas are not 0..n-1 with UNKNOWN_SERVER_ERROR and
// renumbers one it rebuilds).
func checkCompressedRecords(body []byte, n int32) *BatchError {
	return checkCompressedRecordsStats(body, n, nil)
}

// checkCompressedRecordsStats is checkCompressedRecords adding each
// record's timestamp and offset deltas to st when st is not nil.
func checkCompressedRecordsStats(body []byte, n int32, st *recordStats) *BatchError {
	i := 0
	for r := range n {
		if i >= len(body) {
			return batchErr(kerr.InvalidRecord, "Incorrect declared batch size, premature EOF reached: the batch declares %d records and holds %d", n, r)
		}
		size, w := varint32(body, i)
		if w == 0 {
			return batchErr(kerr.InvalidRecord, "Found invalid record structure: record %d's length", r)
		}
		if size < 0 {
			return batchErr(kerr.InvalidRecord, "Invalid record size: %d is negative.", size)
		}
		i += w + 1 // the length, the attributes
		if i > len(body) {
			return batchErr(kerr.InvalidRecord, "Incorrect declared batch size, premature EOF reached in record %d", r)
		}
		var tsd int64
		if i < len(body) && body[i] < 0x80 { // timestamp delta: a varlong
			tsd = int64(body[i]>>1) ^ -int64(body[i]&1)
			i++
		} else {
			var w int
			tsd, w = binary.Varint(body[i:])
			if w <= 0 {
				return batchErr(kerr.InvalidRecord, "Found invalid record structure: record %d's timestamp delta", r)
			}
			i += w
		}
		offd, w := varint32(body, i) // offset delta
		if w == 0 {
			return batchErr(kerr.InvalidRecord, "Found invalid record structure: record %d's offset delta", r)
		}
		i += w
		if st != nil {
			st.add(r, tsd, offd)
		}
		for range 2 { // key, value
			l, w := varint32(body, i)
			if w == 0 {
				return batchErr(kerr.InvalidRecord, "Found invalid record structure: record %d's key or value length", r)
			}
			i += w
			if l > 0 {
				if int(l) > len(body)-i {
					return batchErr(kerr.InvalidRecord, "Incorrect declared batch size, premature EOF reached in record %d", r)
				}
				i += int(l)
			}
		}
		nh, w := varint32(body, i)
		if w == 0 {
			return batchErr(kerr.InvalidRecord, "Found invalid record structure: record %d's header count", r)
		}
		if nh < 0 {
			return batchErr(kerr.InvalidRecord, "Found invalid number of record headers %d", nh)
		}
		i += w
		for range nh {
			for k := range 2 { // header key (not nullable), header value
				l, w := varint32(body, i)
				if w == 0 {
					return batchErr(kerr.InvalidRecord, "Found invalid record structure: record %d's header", r)
				}
				if k == 0 && l < 0 {
					return batchErr(kerr.InvalidRecord, "Invalid negative header key size %d", l)
				}
				i += w
				if l > 0 {
					if int(l) > len(body)-i {
						return batchErr(kerr.InvalidRecord, "Incorrect declared batch size, premature EOF reached in record %d", r)
					}
					i += int(l)
				}
			}
		}
	}
	if i != len(body) {
		return batchErr(kerr.InvalidRecord, "Incorrect declared batch size, records still remaining in file: %d bytes after the batch's %d records", len(body)-i, n)
	}
	return nil
}
