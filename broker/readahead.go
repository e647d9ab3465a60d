package broker

// readAhead is a connection's read buffer: the reader asks the socket for
// up to readAheadSize bytes at a time, so a small request (a consumer's
// fetch, a produce of a few records) arrives with one read system call
// instead of two (its 4-byte size, then its body), and requests a client
// pipelines arrive together. Reads of readAheadSize bytes or more go to the
// socket directly, so large produce bodies are not copied twice. Only the
// connection's read goroutine uses it.
type readAhead struct {
	buf      []byte // allocated on the first read
	pos, end int    // buf[pos:end] is read and not yet taken
}

// readAheadSize is the read buffer of a connection: it holds most small
// requests whole and costs idle connections little.
const readAheadSize = 4 << 10

// readSome reads into p from what is buffered, else from the socket
// (through the buffer when p is small), like one Read call.
func (c *conn) readSome(p []byte) (int, error) {
	ra := &c.ahead
	if ra.pos < ra.end {
		n := copy(p, ra.buf[ra.pos:ra.end])
		ra.pos += n
		return n, nil
	}
	if len(p) >= readAheadSize {
		if len(p) >= rawReadMin && c.raw != nil {
			return rawRead(c.raw, p)
		}
		return c.nc.Read(p)
	}
	if ra.buf == nil {
		ra.buf = make([]byte, readAheadSize)
	}
	got, err := c.nc.Read(ra.buf)
	n := copy(p, ra.buf[:got])
	ra.pos, ra.end = n, got
	return n, err
}
