package broker

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"time"

	"github.com/samsa-broker/samsa/broker/handlers"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// Zero-copy fetch: a Fetch handler given Request.SendFiles answers with a
// *handlers.FileFetch whose record batches are pinned segment file ranges.
// encodeFileFetch encodes the framing around them (kmsg encodes the
// response; the length prefixes of the record fields are rewritten to the
// ranges' sizes) and the write goroutine sends the framing with write and
// each range with sendfile(2) on a plain *net.TCPConn, so record bytes never
// enter user space; on any other connection (TLS wraps net.Conn) each range
// goes through one pooled chunk buffer. Either way a fetch holds framing
// in memory, not data.

var (
	errFetchFraming = errors.New("broker: fetch response framing not found")
	errFileShort    = errors.New("broker: segment file shorter than the fetched range")
)

// outgoing is one encoded response for the write goroutine: buf, with the
// file ranges of spans inserted at their positions.
type outgoing struct {
	buf   []byte
	spans []fileSpan
	fetch *handlers.FileFetch // released once written or dropped
	// sendSlot is 1 + the request's metrics series (ObserveRequest's
	// slot), for its response send time; 0 (the zero value, as on every
	// response not built by conn.handle's handler path) observes nothing.
	sendSlot int16
	// throttle mutes the connection for this long once the response is
	// written (conn.afterResponse): the hook for client quotas.
	throttle time.Duration
	// pooled is buf's pooled backing array (inlineSmall), returned to
	// inlineBufs on release.
	pooled *[]byte
}

// fileSpan is a file range sent after buf[:at] (and before buf[at:]).
type fileSpan struct {
	at    int
	slice storage.FileSlice
}

func (o *outgoing) empty() bool { return o.buf == nil && len(o.spans) == 0 }

// size is the number of bytes the response puts on the wire.
func (o *outgoing) size() int {
	n := len(o.buf)
	for _, s := range o.spans {
		n += int(s.slice.Length)
	}
	return n
}

// release unpins the file ranges and returns a pooled buffer; o must not
// be used after.
func (o *outgoing) release() {
	if o.fetch != nil {
		o.fetch.Release()
		o.fetch = nil
	}
	if o.pooled != nil {
		inlineBufs.Put(o.pooled)
		o.pooled, o.buf = nil, nil
	}
}

// markerSize is the size of the placeholder record set each file range
// takes while kmsg encodes the response: a random per-response nonce
// (12 bytes) and the range's index (4 bytes), which cannot occur in the
// framing by chance.
const markerSize = 16

// encodeFileFetch encodes a FileFetch response for hdr. The response's
// RecordBatches of the ranged partitions are left empty again afterwards.
func encodeFileFetch(hdr wire.RequestHeader, ff *handlers.FileFetch) (outgoing, error) {
	var nonce [12]byte
	rand.Read(nonce[:])
	markers := make([]byte, markerSize*len(ff.Files))
	hint := 64
	for i, pf := range ff.Files {
		m := markers[markerSize*i : markerSize*(i+1) : markerSize*(i+1)]
		copy(m, nonce[:])
		binary.BigEndian.PutUint32(m[12:], uint32(i))
		ff.Topics[pf.Topic].Partitions[pf.Partition].RecordBatches = m
	}
	for i := range ff.Topics {
		t := &ff.Topics[i]
		hint += 32 + len(t.Topic)
		for j := range t.Partitions {
			hint += 96 + len(t.Partitions[j].RecordBatches) + 24*len(t.Partitions[j].AbortedTransactions)
		}
	}
	enc := wire.AppendResponse(make([]byte, 0, hint), hdr, ff.FetchResponse)
	for _, pf := range ff.Files {
		ff.Topics[pf.Topic].Partitions[pf.Partition].RecordBatches = []byte{}
	}
	// v12+ (flexible) record sets are compact bytes, length+1 as an
	// unsigned varint; before, an int32 length.
	flexible := ff.IsFlexible()
	prefix, placeholder := 4, binary.BigEndian.AppendUint32(nil, markerSize)
	if flexible {
		prefix, placeholder = 1, binary.AppendUvarint(nil, markerSize+1)
	}
	o := outgoing{buf: make([]byte, 0, len(enc)+4*len(ff.Files)), fetch: ff}
	pos := 0
	for i, pf := range ff.Files {
		at := bytes.Index(enc[pos:], markers[markerSize*i:markerSize*(i+1)])
		if at < prefix || !bytes.Equal(enc[pos+at-prefix:pos+at], placeholder) {
			return outgoing{fetch: ff}, fmt.Errorf("%w: partition %d of topic %d", errFetchFraming, pf.Partition, pf.Topic)
		}
		at += pos
		o.buf = append(o.buf, enc[pos:at-prefix]...)
		n := pf.Slice.Length
		if flexible {
			o.buf = binary.AppendUvarint(o.buf, uint64(n)+1)
		} else {
			o.buf = binary.BigEndian.AppendUint32(o.buf, uint32(n))
		}
		o.spans = append(o.spans, fileSpan{at: len(o.buf), slice: pf.Slice})
		pos = at + markerSize
	}
	o.buf = append(o.buf, enc[pos:]...)
	total := int64(len(o.buf)) - 4
	for _, s := range o.spans {
		total += s.slice.Length
	}
	if total > math.MaxInt32 {
		return outgoing{fetch: ff}, fmt.Errorf("%w: response of %d bytes", errFetchFraming, total)
	}
	binary.BigEndian.PutUint32(o.buf, uint32(total))
	return o, nil
}

// encodeCachedFetch encodes a FileFetch whose ranges all came with their
// bytes (storage.FileSlice.Cached: small ranges, a consumer at the log
// end) as a plain response into a pooled buffer, the bytes in place of
// the ranges, and unpins the ranges: one encoding and no file read, where
// encodeFileFetch and inlineSmall encode with markers, search, copy the
// framing twice and read each range. ok is false (ff untouched) when a
// range has no cached bytes or the response would not fit the pooled
// buffer.
func encodeCachedFetch(hdr wire.RequestHeader, ff *handlers.FileFetch) (out outgoing, ok bool) {
	size := 64
	for _, pf := range ff.Files {
		b := pf.Slice.Cached()
		if b == nil {
			return outgoing{}, false
		}
		size += len(b)
	}
	for i := range ff.Topics {
		t := &ff.Topics[i]
		size += 32 + len(t.Topic)
		for j := range t.Partitions {
			size += 96 + 24*len(t.Partitions[j].AbortedTransactions)
		}
	}
	if size > inlineBufSize {
		return outgoing{}, false
	}
	for _, pf := range ff.Files {
		ff.Topics[pf.Topic].Partitions[pf.Partition].RecordBatches = pf.Slice.Cached()
	}
	bp := inlineBufs.Get().(*[]byte)
	buf := wire.AppendResponse((*bp)[:0], hdr, ff.FetchResponse)
	for _, pf := range ff.Files {
		ff.Topics[pf.Topic].Partitions[pf.Partition].RecordBatches = []byte{}
	}
	ff.Release()
	out = outgoing{buf: buf}
	if cap(buf) == inlineBufSize {
		*bp = buf[:0]
		out.pooled = bp
	} else {
		inlineBufs.Put(bp) // the size estimate was short: buf grew elsewhere
	}
	return out, true
}

// inlineFileBytes is the largest total of file ranges that inlineSmall
// copies into the response buffer: below it, one write of a copied buffer
// costs less than corking, writing the framing, sendfile and uncorking
// (five system calls), which is what small fetches at high rates (a
// consumer at the log end) paid per response.
const inlineFileBytes = 32 << 10

// inlineSmall copies o's file ranges into o.buf and unpins them when they
// total at most limit bytes (inlineFileBytes), so that o is written with
// one write.
func inlineSmall(o *outgoing, limit int) error {
	n := 0
	for _, s := range o.spans {
		n += int(s.slice.Length)
	}
	if len(o.spans) == 0 || n > limit {
		return nil
	}
	var bp *[]byte
	if size := len(o.buf) + n; size <= inlineBufSize {
		bp = inlineBufs.Get().(*[]byte)
		*bp = (*bp)[:size]
	} else {
		b := make([]byte, size)
		bp = &b
	}
	buf := *bp
	w, prev := 0, 0
	for _, s := range o.spans {
		w += copy(buf[w:], o.buf[prev:s.at])
		prev = s.at
		if b := s.slice.Cached(); b != nil {
			// Read with the batch headers already (storage.ReadSlice).
			w += copy(buf[w:], b)
			continue
		}
		got, err := s.slice.File.ReadAt(buf[w:w+int(s.slice.Length)], s.slice.Offset)
		if got < int(s.slice.Length) {
			if err == nil || errors.Is(err, io.EOF) {
				err = errFileShort
			}
			if cap(buf) == inlineBufSize {
				inlineBufs.Put(bp)
			}
			return fmt.Errorf("broker: read fetched range: %w", err)
		}
		w += got
	}
	copy(buf[w:], o.buf[prev:])
	o.release()
	o.buf, o.spans = buf, nil
	if cap(buf) == inlineBufSize {
		o.pooled = bp
	}
	return nil
}

// inlineBufSize is the capacity of inlineSmall's pooled buffers: the
// inlined records and the framing of a fetch of many partitions.
const inlineBufSize = inlineFileBytes + 32<<10

var inlineBufs = sync.Pool{New: func() any { b := make([]byte, 0, inlineBufSize); return &b }}

// writeOutgoing writes o to nc: the framing with Write, each file range
// with sendfile when nc is a plain TCP connection and the file an OS file,
// else through a pooled chunk buffer.
func writeOutgoing(nc net.Conn, o *outgoing) error {
	if len(o.spans) == 0 {
		_, err := nc.Write(o.buf)
		return err
	}
	s := newRangeSender(nc)
	defer s.done()
	prev := 0
	for _, sp := range o.spans {
		if _, err := nc.Write(o.buf[prev:sp.at]); err != nil {
			return err
		}
		prev = sp.at
		if handled, err := s.send(sp.slice); handled {
			if err != nil {
				return err
			}
			continue
		}
		if err := copyRange(nc, sp.slice); err != nil {
			return err
		}
	}
	_, err := nc.Write(o.buf[prev:])
	return err
}

// copyChunk is the buffer size of the copy path.
const copyChunk = 128 << 10

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyChunk); return &b }}

// copyRange writes a file range to w through one pooled chunk buffer.
func copyRange(w io.Writer, s storage.FileSlice) error {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	for off, end := s.Offset, s.Offset+s.Length; off < end; {
		chunk := buf[:min(int64(len(buf)), end-off)]
		n, err := s.File.ReadAt(chunk, off)
		if n < len(chunk) {
			// The frame's size is already on the wire: a truncated file
			// leaves no way but closing the connection (Kafka does too).
			if err == nil || errors.Is(err, io.EOF) {
				err = errFileShort
			}
			return fmt.Errorf("broker: read fetched range: %w", err)
		}
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		off += int64(n)
	}
	return nil
}
