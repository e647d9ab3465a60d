package wire

import (
	"encoding/binary"
	"hash/crc32"
)

// Checking a Produce request's batches while its bytes arrive.
//
// A large Produce request (franz-go sends 4-8 MiB ones under load) used to
// be read whole, then handed to its handler, which computed each batch's
// CRC-32C and walked its records: by then the first megabytes had left the
// core's 2 MiB L2 cache, and the CRC ran at 6-7 GB/s on them instead of
// about 20 (bench/README.md, stop 29 and 31). ProduceScan follows the
// request's structure as the connection's reader fills the body and checks
// each partition's records as soon as they are all there, on bytes the
// socket read has just written: ValidateProduce then skips what passed
// (ValidateOptions.CRCChecked, RecordsChecked).
//
// The claim a CheckedRecords makes is about its bytes alone (they are one
// batch, its CRC matches, its uncompressed records are framed right), so a
// scan that misreads the request's layout cannot make a bad batch pass:
// the handler uses a claim only for the records field that is exactly
// those bytes of the frame (Prechecked). Anything the scan does not
// understand ends it; the handler then checks everything, as before.

// CheckedRecords is a records field of a Produce request, at Off with Len
// bytes in the request body, that is exactly one magic-2 batch whose CRC-32C
// matched; Walked: its records are uncompressed and their framing and count
// passed the record walk (checkRecords).
type CheckedRecords struct {
	Off, Len int
	Walked   bool
}

// minChecked is the smallest records field checked while it arrives: a
// small one is still in the cache when its handler runs, and each check
// costs a slot in ProduceScan.Checked.
const minChecked = 1 << 10

// maxChecked bounds ProduceScan.Checked (24 bytes each).
const maxChecked = 1 << 14

// ProduceScan follows a Produce request (v3-v13, header included) through
// a body buffer that fills from its start. Advance after each read.
type ProduceScan struct {
	pos    int
	state  uint8
	flex   bool
	v13    bool
	topics int
	parts  int
	recLen int
	// crc is the CRC-32C of the current records field's bytes from its
	// attributes up to crcEnd (an offset in the body), updated after each
	// read on the bytes that read brought (crcEnd 0: not started).
	crc    uint32
	crcEnd int
	// Checked lists the records fields that passed, in request order.
	Checked []CheckedRecords
}

const (
	scanHeader = iota
	scanTopic
	scanPartition
	scanRecords
	scanPartitionTags
	scanTopicTags
	scanDone
)

// Reset makes s ready for a new request, keeping Checked's array.
func (s *ProduceScan) Reset() { *s = ProduceScan{Checked: s.Checked[:0]} }

// Advance scans body, the bytes of the request received so far (a prefix
// of the whole body, the same buffer each time or a copy of it), as far as
// they go.
func (s *ProduceScan) Advance(body []byte) {
	for s.state != scanDone {
		var p int
		var ok, more bool
		switch s.state {
		case scanHeader:
			p, ok, more = s.header(body)
		case scanTopic:
			p, ok, more = s.topic(body)
		case scanPartition:
			p, ok, more = s.partition(body)
		case scanRecords:
			// The CRC runs on what each read brought, right after it.
			end := min(len(body), s.pos+s.recLen)
			if s.crcEnd == 0 && end-s.pos > offAttributes {
				s.crcEnd = s.pos + offAttributes
			}
			if s.crcEnd > 0 && end > s.crcEnd {
				s.crc = crc32.Update(s.crc, castagnoli, body[s.crcEnd:end])
				s.crcEnd = end
			}
			if end < s.pos+s.recLen {
				return
			}
			b := body[s.pos:end]
			if crcOK, walked := precheckBatch(b, s.crc); crcOK && len(s.Checked) < maxChecked {
				s.Checked = append(s.Checked, CheckedRecords{Off: s.pos, Len: len(b), Walked: walked})
			}
			s.crc, s.crcEnd = 0, 0
			p, ok = end, true
		case scanPartitionTags, scanTopicTags:
			p, ok, more = skipTagsAt(body, s.pos)
		}
		if more {
			return
		}
		if !ok {
			s.state = scanDone
			return
		}
		s.pos = p
		s.next()
	}
}

// next moves past the item just scanned.
func (s *ProduceScan) next() {
	switch s.state {
	case scanHeader:
		s.state = scanTopic
		if s.topics <= 0 {
			s.state = scanDone
		}
	case scanTopic:
		s.state = scanPartition
		if s.parts <= 0 {
			s.endTopic()
		}
	case scanPartition:
		if s.recLen >= 0 {
			s.state = scanRecords
			return
		}
		s.endPartition()
	case scanRecords:
		s.endPartition()
	case scanPartitionTags:
		s.finishPartition()
	case scanTopicTags:
		s.finishTopic()
	}
}

func (s *ProduceScan) endPartition() {
	if s.flex {
		s.state = scanPartitionTags
		return
	}
	s.finishPartition()
}

func (s *ProduceScan) finishPartition() {
	s.parts--
	s.state = scanPartition
	if s.parts <= 0 {
		s.endTopic()
	}
}

func (s *ProduceScan) endTopic() {
	if s.flex {
		s.state = scanTopicTags
		return
	}
	s.finishTopic()
}

func (s *ProduceScan) finishTopic() {
	s.topics--
	s.state = scanTopic
	if s.topics <= 0 {
		s.state = scanDone // the request's own tags need no scan
	}
}

// header scans the request header and the fields before the topics.
func (s *ProduceScan) header(b []byte) (int, bool, bool) {
	if len(b) < 8 {
		return 0, false, true
	}
	key, v := int16(binary.BigEndian.Uint16(b)), int16(binary.BigEndian.Uint16(b[2:]))
	if key != 0 || v < 3 || v > 13 {
		return 0, false, false
	}
	s.flex, s.v13 = v >= 9, v >= 13
	p, ok, more := stringAt(b, 8, false) // client id: never compact
	if s.flex && ok {
		p, ok, more = skipTagsAt(b, p)
	}
	if ok {
		p, ok, more = stringAt(b, p, s.flex) // transactional id
	}
	if ok {
		if p+6 > len(b) {
			return 0, false, true
		}
		p += 6 // acks, timeout
		s.topics, p, ok, more = lengthAt(b, p, s.flex)
	}
	return p, ok && s.topics >= 0, more
}

func (s *ProduceScan) topic(b []byte) (int, bool, bool) {
	p, ok, more := s.pos, true, false
	if s.v13 {
		if p += 16; p > len(b) {
			return 0, false, true
		}
	} else {
		p, ok, more = stringAt(b, p, s.flex)
	}
	if ok {
		s.parts, p, ok, more = lengthAt(b, p, s.flex)
	}
	return p, ok && s.parts >= 0, more
}

func (s *ProduceScan) partition(b []byte) (int, bool, bool) {
	p := s.pos + 4 // partition index
	if p > len(b) {
		return 0, false, true
	}
	n, p, ok, more := lengthAt(b, p, s.flex)
	if !ok {
		return 0, false, more
	}
	s.recLen = n
	if n >= 0 && n < minChecked {
		// Too small to be worth it: skip over it without a check.
		if p+n > len(b) {
			return 0, false, true
		}
		p += n
		s.recLen = -1
	}
	return p, true, false
}

// lengthAt reads an array or bytes length at p: int32, or compact (uvarint
// of length+1; -1 is null).
func lengthAt(b []byte, p int, compact bool) (n, next int, ok, more bool) {
	if !compact {
		if p+4 > len(b) {
			return 0, 0, false, true
		}
		return int(int32(binary.BigEndian.Uint32(b[p:]))), p + 4, true, false
	}
	if p >= len(b) {
		return 0, 0, false, true
	}
	u, w := binary.Uvarint(b[p:])
	if w == 0 {
		return 0, 0, false, true
	}
	if w < 0 || u > 1<<31 {
		return 0, 0, false, false
	}
	return int(u) - 1, p + w, true, false
}

// stringAt skips a nullable string at p.
func stringAt(b []byte, p int, compact bool) (int, bool, bool) {
	var n int
	if compact {
		var ok, more bool
		if n, p, ok, more = lengthAt(b, p, true); !ok {
			return 0, false, more
		}
	} else {
		if p+2 > len(b) {
			return 0, false, true
		}
		n = int(int16(binary.BigEndian.Uint16(b[p:])))
		p += 2
	}
	if n < -1 {
		return 0, false, false
	}
	if n > 0 {
		if p+n > len(b) {
			return 0, false, true
		}
		p += n
	}
	return p, true, false
}

// skipTagsAt skips a tagged-field section at p.
func skipTagsAt(b []byte, p int) (int, bool, bool) {
	if p >= len(b) {
		return 0, false, true
	}
	count, w := binary.Uvarint(b[p:])
	if w == 0 {
		return 0, false, true
	}
	if w < 0 || count > MaxTaggedFields {
		return 0, false, false
	}
	p += w
	for range count {
		if _, w = binary.Uvarint(b[p:]); w <= 0 {
			return 0, false, w == 0
		}
		p += w
		size, w := binary.Uvarint(b[p:])
		if w <= 0 {
			return 0, false, w == 0
		}
		p += w
		if size > uint64(len(b)-p) {
			return 0, false, true
		}
		p += int(size)
	}
	return p, true, false
}

// PrecheckBatch reports whether b is exactly one magic-2 batch whose
// CRC-32C matches, and then whether its records are uncompressed and pass
// the record walk of ValidateProduce. It checks nothing else: the other
// checks of ValidateProduce are made on the header by the handler.
func PrecheckBatch(b []byte) (crcOK, walked bool) {
	if len(b) <= offAttributes {
		return false, false
	}
	return precheckBatch(b, crc32.Checksum(b[offAttributes:], castagnoli))
}

// precheckBatch is PrecheckBatch with crc, the CRC-32C of b[offAttributes:].
func precheckBatch(b []byte, crc uint32) (crcOK, walked bool) {
	if len(b) < BatchHeaderSize || b[offMagic] != 2 {
		return false, false
	}
	h, _ := ParseBatchHeader(b)
	if h.BatchLength < minBatchLength || h.TotalSize() != len(b) || crc != h.CRC {
		return false, false
	}
	return true, h.Compression() == CompressionNone && h.NumRecords > 0 && recordsFramed(b[BatchHeaderSize:], h.NumRecords)
}

// Prechecked returns what a ProduceScan of body established about records,
// a records field decoded from body: whether its CRC matched and whether
// its records passed the walk. Both are false unless records is exactly
// the bytes of one of checked.
func Prechecked(body []byte, checked []CheckedRecords, records []byte) (crcOK, walked bool) {
	if len(records) == 0 {
		return false, false
	}
	for _, c := range checked {
		if c.Len == len(records) && c.Off >= 0 && c.Off+c.Len <= len(body) && &body[c.Off] == &records[0] {
			return true, c.Walked
		}
	}
	return false, false
}
