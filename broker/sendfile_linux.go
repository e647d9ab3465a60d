package broker

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
)

// rangeSender sends file ranges to a plain TCP socket with sendfile(2),
// with the socket corked (TCP_CORK) for the whole response so that the
// small framing writes and the ranges leave in full segments. A nil
// rangeSender sends nothing (the caller copies).
type rangeSender struct {
	raw syscall.RawConn
}

// newRangeSender returns the sender for nc: nil unless nc is a
// *net.TCPConn itself (a TLS or other wrapper must see every byte).
func newRangeSender(nc net.Conn) *rangeSender {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	s := &rangeSender{raw: raw}
	s.cork(1)
	return s
}

// cork sets TCP_CORK; uncorking (0) sends what is held at once.
func (s *rangeSender) cork(on int) {
	s.raw.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, on)
	})
}

// done uncorks the socket.
func (s *rangeSender) done() {
	if s != nil {
		s.cork(0)
	}
}

// send writes the range with sendfile; handled is false (nothing written)
// when the range's file is not an OS file.
func (s *rangeSender) send(r storage.FileSlice) (handled bool, err error) {
	if s == nil {
		return false, nil
	}
	osf, ok := r.File.(vfs.OSFiler)
	if !ok {
		return false, nil
	}
	f := osf.OSFile()
	if f == nil {
		return false, nil
	}
	fraw, err := f.SyscallConn()
	if err != nil {
		return false, nil
	}
	off, left := r.Offset, r.Length
	var sendErr, waitErr error
	ctlErr := fraw.Control(func(in uintptr) {
		// RawConn.Write waits for the socket to be writable (honouring
		// the write deadline) whenever the callback returns false.
		waitErr = s.raw.Write(func(out uintptr) bool {
			for left > 0 {
				n, err := syscall.Sendfile(int(out), int(in), &off, int(min(left, 1<<30)))
				if n > 0 {
					left -= int64(n)
				}
				switch {
				case errors.Is(err, syscall.EAGAIN):
					return false
				case errors.Is(err, syscall.EINTR):
					continue
				case err != nil:
					sendErr = fmt.Errorf("broker: sendfile: %w", err)
					return true
				case n == 0:
					// End of file before the range's end: truncated.
					sendErr = errFileShort
					return true
				}
			}
			return true
		})
	})
	return true, errors.Join(ctlErr, waitErr, sendErr)
}
