package broker

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"

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
		sendfile := syscall.Sendfile
		if rangeCached(int(in), off, left) {
			sendfile = rawSendfile
		}
		// RawConn.Write waits for the socket to be writable (honouring
		// the write deadline) whenever the callback returns false.
		waitErr = s.raw.Write(func(out uintptr) bool {
			for left > 0 {
				n, err := sendfile(int(out), int(in), &off, int(min(left, 1<<30)))
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

// Sending a range whose pages are all in the page cache does not go
// through the Go scheduler's system call path (issue 15, bench/README.md
// "stop 31"). A sendfile to a non-blocking socket returns once the socket
// buffer is full, after tens of microseconds, and with syscall.Sendfile
// the runtime's sysmon often took the processor away meanwhile (a system
// call running for over 20 us), woke another thread to run it, and the
// sending thread parked when the call returned: about 2,400 context
// switches per GB consumed, a third of the broker's, and the sysmon thread
// kept to its shortest sleeps. Kafka's network threads just make the call.
// A range with a page not cached goes the scheduler-aware way, since its
// sendfile reads the disk: it must not hold a processor (and a stop of the
// world) meanwhile.

// rawSendChunk caps one raw sendfile, bounding how long it holds its
// processor (a larger buffer than Kafka's socket.send.buffer.bytes lets a
// call copy megabytes) and so the wait of a stop-the-world for it.
const rawSendChunk = 1 << 20

// rawSendfile is sendfile(2) made without entering the scheduler's
// system call state, at most rawSendChunk bytes.
func rawSendfile(out, in int, off *int64, count int) (int, error) {
	r, _, e := syscall.RawSyscall6(syscall.SYS_SENDFILE, uintptr(out), uintptr(in), uintptr(unsafe.Pointer(off)), uintptr(min(count, rawSendChunk)), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// sysCachestat is cachestat(2) (Linux 6.5): 451 on the 64-bit
// architectures of rawSendArch (MIPS numbers it from 4000 or 5000).
const sysCachestat = 451

// rawSendArch: the 64-bit architectures whose sendfile takes a 64-bit
// offset as SYS_SENDFILE and whose cachestat is sysCachestat. Elsewhere
// (386 and arm need SYS_SENDFILE64, MIPS) every range goes the
// scheduler-aware way.
var rawSendArch = map[string]bool{"amd64": true, "arm64": true, "riscv64": true, "ppc64": true, "ppc64le": true, "s390x": true, "loong64": true}[runtime.GOARCH]

// cachestatUnsupported is set once cachestat failed with ENOSYS (an older
// kernel) or EPERM (a seccomp filter that does not know it), or from the
// start off rawSendArch: every range then goes the scheduler-aware way,
// as before.
var cachestatUnsupported atomic.Bool

func init() { cachestatUnsupported.Store(!rawSendArch) }

// rangeCached reports whether every page of fd's bytes [off, off+n) is in
// the page cache (cachestat(2)); false when it cannot tell.
func rangeCached(fd int, off, n int64) bool {
	if n <= 0 || cachestatUnsupported.Load() {
		return false
	}
	page := int64(os.Getpagesize())
	first := off / page * page
	rng := [2]uint64{uint64(first), uint64(off + n - first)}
	var cs [5]uint64 // nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted
	_, _, e := syscall.RawSyscall6(sysCachestat, uintptr(fd), uintptr(unsafe.Pointer(&rng)), uintptr(unsafe.Pointer(&cs)), 0, 0, 0)
	if e != 0 {
		if e == syscall.ENOSYS || e == syscall.EPERM {
			cachestatUnsupported.Store(true)
		}
		return false
	}
	pages := (int64(rng[1]) + page - 1) / page
	return int64(cs[0]) >= pages
}
