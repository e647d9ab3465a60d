package broker

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Large socket reads without handing off the processor.
//
// A read of a large produce body copies up to a few megabytes out of the
// socket (100-300 us): long enough that the Go runtime's sysmon sees the
// goroutine in a system call, takes its processor away and wakes another
// thread to run it, and the reading thread then has to get a processor
// back. The socket is non-blocking (Go's network poller waits for it), so
// the read never blocks in the kernel: rawRead makes it with
// syscall.RawSyscall inside RawConn.Read, which waits for readability (and
// honours the read deadline) through the poller as net.Conn.Read does.
// The same as the consume path's raw sendfile of cached ranges (h-consume).

// rawReadMin is the smallest read made raw: a smaller copy is too short
// for sysmon to notice.
const rawReadMin = 64 << 10

// rawSocket is a plain TCP connection's raw side, used by its read
// goroutine only. Its read callback is bound once, so a read allocates
// nothing.
type rawSocket struct {
	rc    syscall.RawConn
	fn    func(fd uintptr) bool
	p     []byte
	n     uintptr
	errno syscall.Errno
}

// rawReader returns the raw side of nc when it is a plain TCP connection,
// else nil.
func rawReader(nc net.Conn) *rawSocket {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	s := &rawSocket{rc: rc}
	s.fn = s.readFD
	return s
}

func (s *rawSocket) readFD(fd uintptr) bool {
	for {
		s.n, _, s.errno = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&s.p[0])), uintptr(len(s.p)))
		if s.errno != syscall.EINTR {
			return s.errno != syscall.EAGAIN
		}
	}
}

// rawRead reads into p (not empty) as net.Conn.Read does: some bytes, or
// io.EOF at the end of the stream, or the poller's error (deadline,
// closed connection).
func rawRead(s *rawSocket, p []byte) (int, error) {
	s.p, s.n, s.errno = p, 0, 0
	err := s.rc.Read(s.fn)
	s.p = nil
	switch {
	case err != nil:
		return 0, err
	case s.errno != 0:
		return 0, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", s.errno)}
	case s.n == 0:
		return 0, io.EOF
	}
	return int(s.n), nil
}
